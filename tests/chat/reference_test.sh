#!/usr/bin/env bash
# Reference agreement: ChatTemplate must render every template of
# tests/chat/reference_templates.json on every conversation of
# tests/chat/reference_cases.json exactly as @huggingface/jinja does, and
# raise (with the same message) exactly where it raises.
#
#   reference_test.sh SHOAL_CHAT_TESTS_BINARY SOURCE_DIR [CASES.json]
#
# CASES.json (default tests/chat/reference_cases.json) lets a change be
# checked on more conversations.
#
# Node writes the expected renderings; the ChatTemplateReference gtest of
# shoal_chat_tests renders the same cases and compares. Exits 77 (ctest's
# SKIP_RETURN_CODE) only when node_modules is absent; anything else that is
# missing is a failure.
set -euo pipefail

tests="$1"
root="$2"
cases="$(realpath "${3:-$root/tests/chat/reference_cases.json}")"

if [ ! -d "$root/node_modules" ]; then
  echo "SKIP: $root/node_modules is absent (run scripts/setup)"
  exit 77
fi
if [ ! -d "$root/node_modules/@huggingface/jinja" ]; then
  echo "FAIL: @huggingface/jinja is not installed (npm install)"
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

(cd "$root" && node tests/reference/chat_template_reference.mjs \
  tests/chat/reference_templates.json "$cases") >"$work/expected.jsonl"
echo "reference: $(wc -l <"$work/expected.jsonl") renderings from @huggingface/jinja"

SHOAL_CHAT_REFERENCE="$work/expected.jsonl" SHOAL_CHAT_CASES="$cases" "$tests" --gtest_filter='ChatTemplateReference.*'
