#!/usr/bin/python3
"""SigLIP's token ids for each line of a JSON-lines corpus: what transformers'
SiglipTokenizer (tokenization_siglip.py, as documented) does to a text, with the
sentencepiece library itself (Debian's python3-sentencepiece) as the model — the
reference Shoal's conversion of spiece.model (siglip_tokenizer.h) is checked
against.

usage: siglip_tokenizer_reference.py MODEL_DIR CORPUS [--no-special-tokens] [--check GOT]

SiglipTokenizer, step by step:
  - canonicalize_text: string.punctuation removed, re.sub(r"\\s+", " "), strip();
  - lower-cased when tokenizer_config.json's do_lower_case (true unless it says);
  - "▁" + the text with any "▁" made a space;
  - SentencePiece with add_dummy_prefix turned off in the model's
    normalizer_spec, on unk_token + that text, the unknown token's own pieces
    dropped from the front (the legacy-free trick of T5's tokenizer);
  - a leading lone "▁" dropped when a special token follows it;
  - eos_token appended (with special tokens) unless it ends the ids already.

Prints one JSON array per line, as `shoal tokenize --json-lines` does. --check GOT
compares GOT (Shoal's ids, a line each) instead and exits 1 on the first line that
differs, unless the two are a tie: the same pieces' text at the same total score
(SentencePiece sums scores in float32, Shoal in float64).
"""
import argparse
import json
import os
import re
import string
import sys

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

UNDERLINE = "\u2581"


def load(model_dir):
    config = json.load(open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8"))
    with open(os.path.join(model_dir, "spiece.model"), "rb") as f:
        proto = model_pb2.ModelProto.FromString(f.read())
    proto.normalizer_spec.add_dummy_prefix = False  # as SiglipTokenizer.get_spm_processor does
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(proto.SerializeToString())
    return sp, config


def canonicalize(text):
    text = text.translate(str.maketrans("", "", string.punctuation))
    return re.sub(r"\s+", " ", text).strip()


def encode(sp, config, text, special):
    unk, eos = config.get("unk_token", "<unk>"), config.get("eos_token", "</s>")
    specials = {unk, eos, config.get("pad_token", "</s>")}
    text = canonicalize(text)
    if config.get("do_lower_case", True):
        text = text.lower()
    text = UNDERLINE + text.replace(UNDERLINE, " ")
    unk_length = len(sp.encode(unk, out_type=str))
    pieces = sp.encode(unk + text, out_type=str)
    pieces = pieces[unk_length:] if len(pieces) >= unk_length else pieces
    if len(pieces) > 1 and pieces[0] == UNDERLINE and pieces[1] in specials:
        pieces = pieces[1:]
    ids = [sp.piece_to_id(p) for p in pieces]
    eos_id = sp.piece_to_id(eos)
    if special and (not ids or ids[-1] != eos_id):
        ids.append(eos_id)
    return ids


def is_tie(sp, want, got):
    n = sp.get_piece_size()
    if any(not 0 <= i < n for i in want + got):
        return False
    if "".join(sp.id_to_piece(i) for i in want) != "".join(sp.id_to_piece(i) for i in got):
        return False
    a, b = sum(sp.get_score(i) for i in want), sum(sp.get_score(i) for i in got)
    return abs(a - b) <= 1e-5 * max(1.0, abs(a))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir")
    parser.add_argument("corpus")
    parser.add_argument("--no-special-tokens", action="store_true")
    parser.add_argument("--check")
    args = parser.parse_args()
    sp, config = load(args.model_dir)
    with open(args.corpus, encoding="utf-8") as f:
        texts = [json.loads(line) for line in f if line.strip()]
    wants = [encode(sp, config, t, not args.no_special_tokens) for t in texts]
    if not args.check:
        for w in wants:
            print(json.dumps(w))
        return 0
    with open(args.check, encoding="utf-8") as f:
        gots = [json.loads(line) for line in f]
    if len(gots) != len(wants):
        print(f"FAIL: {len(gots)} lines from Shoal, {len(wants)} texts")
        return 1
    ties = 0
    for i, (text, want, got) in enumerate(zip(texts, wants, gots)):
        if got == want:
            continue
        if got is not None and is_tie(sp, want, got):
            ties += 1
            continue
        print(f"FAIL: line {i + 1} {text!r}\n  reference {want}\n  shoal     {got}")
        return 1
    print(f"ok: {len(wants)} texts agree ({ties} ties of equal score)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
