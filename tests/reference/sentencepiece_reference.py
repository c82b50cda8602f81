#!/usr/bin/python3
"""XLM-R's token ids for each line of a JSON-lines corpus, from the sentencepiece
library itself (Debian's python3-sentencepiece): the reference the tokenizer.json
that scripts/make-test-models converts from the same model is checked against.

usage: sentencepiece_reference.py MODEL_FILE CORPUS [--no-special-tokens] [--check GOT]

Prints one JSON array per line, as `shoal tokenize --json-lines` does. Ids are
fairseq's, as XLM-R numbers them: <s>=0 <pad>=1 </s>=2 <unk>=3, every other
piece one past its SentencePiece id; with special tokens, <s> ... </s>.

--check GOT compares GOT (Shoal's ids, a line each) with the reference instead,
and exits 1 on the first line that differs for any other reason than the two
that are by design:
  - a tie: both segmentations spell the same pieces' text and score the same
    (SentencePiece sums piece scores in float32, the tokenizers crate and Shoal
    in float64, so an exact tie can fall either way);
  - the text spells a special token ("<s>", "<mask>", ...): tokenizer.json
    matches those as added tokens before the model, SentencePiece reads them
    as text.
"""
import argparse
import json
import sys

import sentencepiece as spm


def fairseq_id(sp, i):
    if i == sp.unk_id():
        return 3
    if i == sp.bos_id():
        return 0
    if i == sp.eos_id():
        return 2
    return i + 1


SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")


def spm_id(sp, fid):
    """The SentencePiece id of a fairseq id (None for <pad> and <mask>)."""
    if fid in (0, 2, 3):
        return {0: sp.bos_id(), 2: sp.eos_id(), 3: sp.unk_id()}[fid]
    return fid - 1 if 4 <= fid <= sp.get_piece_size() else None


def is_tie(sp, want, got):
    a = [spm_id(sp, i) for i in want]
    b = [spm_id(sp, i) for i in got]
    if None in a or None in b:
        return False
    if "".join(sp.id_to_piece(i) for i in a) != "".join(sp.id_to_piece(i) for i in b):
        return False
    score_a = sum(sp.get_score(i) for i in a)
    score_b = sum(sp.get_score(i) for i in b)
    return abs(score_a - score_b) <= 1e-5 * max(1.0, abs(score_a))


def check(sp, lines, want, got_path):
    with open(got_path, encoding="utf-8") as f:
        got = [json.loads(line) for line in f if line.strip()]
    if len(got) != len(want):
        print(f"FAIL: the corpus has {len(want)} lines, Shoal printed {len(got)}")
        return 1
    ties = specials = 0
    for n, (text, w, g) in enumerate(zip(lines, want, got), 1):
        if w == g:
            continue
        if is_tie(sp, w, g):
            ties += 1
        elif any(t in text for t in SPECIALS):
            specials += 1
        else:
            print(f"FAIL: line {n} differs\n  text:      {json.dumps(text, ensure_ascii=False)}"
                  f"\n  reference: {w}\n  shoal:     {g}")
            return 1
    print(f"{len(want)} lines: {len(want) - ties - specials} identical, {ties} equal-score ties, "
          f"{specials} spelling special tokens")
    return 0


def main(argv):
    usage = next(line for line in __doc__.splitlines() if line.startswith("usage: "))
    parser = argparse.ArgumentParser(usage=usage[len("usage: "):])
    parser.add_argument("model")
    parser.add_argument("corpus")
    parser.add_argument("--no-special-tokens", action="store_true")
    parser.add_argument("--check", metavar="GOT")
    args = parser.parse_args(argv)
    sp = spm.SentencePieceProcessor(model_file=args.model)
    with open(args.corpus, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    want = []
    for text in lines:
        ids = [fairseq_id(sp, i) for i in sp.encode(text)]
        want.append(ids if args.no_special_tokens else [0] + ids + [2])
    if args.check:
        return check(sp, lines, want, args.check)
    sys.stdout.write("\n".join(json.dumps(w, separators=(",", ":")) for w in want) + "\n")
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
