#!/usr/bin/env bash
# XLM-R's, DeBERTa-v3's or SigLIP's tokenizer against the sentencepiece
# library: `shoal tokenize --json-lines` on the model directory, against that
# model's own ids, on every line of the reference corpus, with and without
# special tokens. MODEL_DIR holds sentencepiece.bpe.model (XLM-R) or spm.model
# (DeBERTa-v3) beside the tokenizer.json scripts/make-test-models converted
# from it (Precompiled nmt_nfkc rules, Metaspace, Unigram), checked by
# tests/reference/sentencepiece_reference.py; or spiece.model and no
# tokenizer.json (SigLIP, converted by Shoal as it loads), checked by
# tests/reference/siglip_tokenizer_reference.py — on the edge cases of
# SiglipTokenizer's canonicalization too.
#
#   sentencepiece_reference_test.sh SHOAL_BINARY SOURCE_DIR MODEL_DIR
set -euo pipefail

shoal="$1"
root="$2"
model="$3"
corpus="$root/tests/reference/corpus/tokenizer_corpus.jsonl"
reference="$root/tests/reference/sentencepiece_reference.py"

name=xlm-r
reference=("$reference" "$model/sentencepiece.bpe.model")
if [ -f "$model/spm.model" ]; then
  name=deberta-v3
  reference=("$root/tests/reference/sentencepiece_reference.py" "$model/spm.model")
elif [ -f "$model/spiece.model" ]; then
  name=siglip
  reference=("$root/tests/reference/siglip_tokenizer_reference.py" "$model")
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ "$name" = siglip ]; then
  cat "$corpus" "$root/tests/reference/corpus/siglip_edge_cases.jsonl" >"$work/corpus"
  corpus="$work/corpus"
fi

for mode in special plain; do
  flag=()
  [ "$mode" = plain ] && flag=(--no-special-tokens)
  "$shoal" tokenize "$model" --json-lines "${flag[@]}" <"$corpus" >"$work/got.$mode"
  echo -n "$name ($mode): "
  "${reference[@]}" "$corpus" "${flag[@]}" --check "$work/got.$mode"
done
