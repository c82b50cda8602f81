#!/usr/bin/python3
"""XLM-R's or DeBERTa-v3's token ids for each line of a JSON-lines corpus, from the
sentencepiece library itself (Debian's python3-sentencepiece): the reference the
tokenizer.json that scripts/make-test-models converts from the same model is
checked against.

usage: sentencepiece_reference.py MODEL_FILE CORPUS [--no-special-tokens] [--check GOT]

Prints one JSON array per line, as `shoal tokenize --json-lines` does. Ids are
fairseq's, as XLM-R numbers them: <s>=0 <pad>=1 </s>=2 <unk>=3, every other
piece one past its SentencePiece id; with special tokens, <s> ... </s>. A model
whose bos piece is [CLS] (DeBERTa-v3's spm.model: [PAD]=0 [CLS]=1 [SEP]=2
[UNK]=3) keeps SentencePiece's own ids, [MASK] one past them; with special
tokens, [CLS] ... [SEP].

--check GOT compares GOT (Shoal's ids, a line each) with the reference instead,
and exits 1 on the first line that differs for any other reason than those
that are by design:
  - a tie: both segmentations spell the same pieces' text and score the same
    (SentencePiece sums piece scores in float32, the tokenizers crate and Shoal
    in float64, so an exact tie can fall either way);
  - the text spells a special token ("<s>", "<mask>", "[CLS]", ...):
    tokenizer.json matches those as added tokens before the model,
    SentencePiece reads them as text;
  - DeBERTa-v3 only: the text ends in a space and then characters the
    nmt_nfkc rules drop (U+200E, ...): transformers' DebertaV2Converter strips
    the text before those rules run, so the space is left and ends the text
    as a "▁" piece of its own, where SentencePiece strips after its rules.
"""
import argparse
import json
import sys

import sentencepiece as spm


def deberta_layout(sp):
    """DeBERTa-v3's spm.model: [CLS] as the bos piece, tokenizer.json's ids SentencePiece's own."""
    return sp.bos_id() >= 0 and sp.id_to_piece(sp.bos_id()) == "[CLS]"


def fairseq_id(sp, i):
    if deberta_layout(sp):
        return i
    if i == sp.unk_id():
        return 3
    if i == sp.bos_id():
        return 0
    if i == sp.eos_id():
        return 2
    return i + 1


SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>", "[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]")


def spm_id(sp, fid):
    """The SentencePiece id of a fairseq id (None for <pad> and <mask>; DeBERTa-v3's
    ids are SentencePiece's, None for [MASK])."""
    if deberta_layout(sp):
        return fid if 0 <= fid < sp.get_piece_size() else None
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


def is_dropped_end(sp, text, want, got):
    """DeBERTa-v3's tokenizer.json (Strip, then the rules) against SentencePiece
    (the rules, then strip): `got` is `want` with one more "▁" at the end of
    the text, whose last characters the rules drop, after a space."""
    if not deberta_layout(sp) or len(got) != len(want) + 1:
        return False
    stripped = text.rstrip()
    kept = stripped.rstrip("".join(c for c in set(stripped) if not c.isspace() and not sp.encode(c)))
    if kept == stripped or not kept[-1:].isspace():
        return False
    space = sp.piece_to_id("\u2581")
    end = len(want) - 1 if want and want[-1] == sp.eos_id() else len(want)  # before [SEP]
    return got == want[:end] + [space] + want[end:]


def check(sp, lines, want, got_path):
    with open(got_path, encoding="utf-8") as f:
        got = [json.loads(line) for line in f if line.strip()]
    if len(got) != len(want):
        print(f"FAIL: the corpus has {len(want)} lines, Shoal printed {len(got)}")
        return 1
    ties = specials = dropped_ends = 0
    for n, (text, w, g) in enumerate(zip(lines, want, got), 1):
        if w == g:
            continue
        if is_tie(sp, w, g):
            ties += 1
        elif any(t in text for t in SPECIALS):
            specials += 1
        elif is_dropped_end(sp, text, w, g):
            dropped_ends += 1
        else:
            print(f"FAIL: line {n} differs\n  text:      {json.dumps(text, ensure_ascii=False)}"
                  f"\n  reference: {w}\n  shoal:     {g}")
            return 1
    identical = len(want) - ties - specials - dropped_ends
    print(f"{len(want)} lines: {identical} identical, {ties} equal-score ties, "
          f"{specials} spelling special tokens"
          + (f", {dropped_ends} ending in a space the converter keeps" if deberta_layout(sp) else ""))
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
        bos, eos = fairseq_id(sp, sp.bos_id()), fairseq_id(sp, sp.eos_id())
        want.append(ids if args.no_special_tokens else [bos] + ids + [eos])
    if args.check:
        return check(sp, lines, want, args.check)
    sys.stdout.write("\n".join(json.dumps(w, separators=(",", ":")) for w in want) + "\n")
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
