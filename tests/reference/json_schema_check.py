#!/usr/bin/python3
"""Validates documents against a JSON Schema with the jsonschema library
(Debian's python3-jsonschema): the independent check of what structured
output writes. Reads {"schema": {...}, "documents": ["text", ...]} on stdin;
prints one line per document ("ok" or why not) and exits 1 if any fails."""
import json
import sys

import jsonschema

request = json.load(sys.stdin)
validator = jsonschema.Draft202012Validator(request["schema"], format_checker=jsonschema.FormatChecker())
failed = False
for text in request["documents"]:
    try:
        doc = json.loads(text)
    except ValueError as e:
        print(f"not JSON ({e}): {text!r}")
        failed = True
        continue
    errors = [e.message for e in validator.iter_errors(doc)]
    print("ok" if not errors else f"invalid ({'; '.join(errors)}): {text!r}")
    failed = failed or bool(errors)
sys.exit(1 if failed else 0)
