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
# With --slow-files, Shoal reads a copy of MODEL_DIR without its
# tokenizer.json (XLM-R's sentencepiece.bpe.model or DeBERTa-v3's spm.model
# converted as XLMRobertaConverter or DebertaV2Converter does).
#
#   sentencepiece_reference_test.sh SHOAL_BINARY SOURCE_DIR MODEL_DIR [--slow-files]
set -euo pipefail

shoal="$1"
root="$2"
model="$3"
slow_files="${4:-}"
corpus="$root/tests/reference/corpus/tokenizer_corpus.jsonl"
references="$root/tests/reference"

name=xlm-r
reference=("$references/sentencepiece_reference.py" "$model/sentencepiece.bpe.model")
if [ -f "$model/spm.model" ]; then
  name=deberta-v3
  reference=("$references/sentencepiece_reference.py" "$model/spm.model")
elif [ -f "$model/spiece.model" ]; then
  name=siglip
  reference=("$references/siglip_tokenizer_reference.py" "$model")
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
served="$model"
if [ "$slow_files" = --slow-files ]; then
  cp -r "$model" "$work/slow"
  rm "$work/slow/tokenizer.json"
  served="$work/slow"
fi
if [ "$name" = siglip ]; then
  cat "$corpus" "$root/tests/reference/corpus/siglip_edge_cases.jsonl" >"$work/corpus"
  corpus="$work/corpus"
fi

for mode in special plain; do
  flag=()
  [ "$mode" = plain ] && flag=(--no-special-tokens)
  "$shoal" tokenize "$served" --json-lines "${flag[@]}" <"$corpus" >"$work/got.$mode"
  echo -n "$name ($mode): "
  "${reference[@]}" "$corpus" "${flag[@]}" --check "$work/got.$mode"
done
