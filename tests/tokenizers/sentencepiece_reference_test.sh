#!/usr/bin/env bash
# XLM-R's or DeBERTa-v3's tokenizer against the sentencepiece library: `shoal
# tokenize --json-lines` on the tokenizer.json that scripts/make-test-models
# converted from its SentencePiece model (Precompiled nmt_nfkc rules, Metaspace,
# Unigram), against that model's own ids (tests/reference/
# sentencepiece_reference.py), on every line of the reference corpus, with and
# without special tokens. MODEL_DIR holds sentencepiece.bpe.model (XLM-R) or
# spm.model (DeBERTa-v3).
#
#   sentencepiece_reference_test.sh SHOAL_BINARY SOURCE_DIR MODEL_DIR
set -euo pipefail

shoal="$1"
root="$2"
model="$3"
corpus="$root/tests/reference/corpus/tokenizer_corpus.jsonl"
reference="$root/tests/reference/sentencepiece_reference.py"

name=xlm-r
spm_model="$model/sentencepiece.bpe.model"
if [ -f "$model/spm.model" ]; then
  name=deberta-v3
  spm_model="$model/spm.model"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for mode in special plain; do
  flag=()
  [ "$mode" = plain ] && flag=(--no-special-tokens)
  "$shoal" tokenize "$model/tokenizer.json" --json-lines "${flag[@]}" <"$corpus" >"$work/got.$mode"
  echo -n "$name ($mode): "
  "$reference" "$spm_model" "$corpus" "${flag[@]}" --check "$work/got.$mode"
done
