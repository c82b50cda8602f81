#!/usr/bin/python3
"""Reference extraction: what transformers' token-classification and
text-classification pipelines answer, for Shoal's extract tests.

usage: extraction_reference.py MODEL_DIR IN.json OUT.json

IN.json:  {"aggregation": "none"|"simple"|"first"|"average"|"max", "top_k": k,
           "inputs": [{"text": str, "ids": [...], "offsets": [[start, end], ...],
                       "special": [0|1, ...]}, ...]}
  ids, byte offsets into the text's UTF-8 (a byte-level token may hold part
  of a character) and the special-token mask are the tokenizer's (checked against its own references elsewhere); this script
  runs the model on the ids itself (bert_reference.py, float64).
OUT.json: {"outputs": [{"entities": [{"label", "score", "start", "end", "text"}...],
                        "margin": m} | {"labels": [{"label", "score"}...]}, ...]}
  start/end count characters (Python str indices). margin: the smallest gap,
  over the item's tokens, between the best and second-best label
  probabilities; a test treats items with a tiny margin as ties.

Token classification, as the pipeline's documentation and code define it:
softmax per token; special tokens dropped; a token is a subword when the
tokenizer has a continuing-subword prefix and the piece's length differs
from its text's, else when it neither starts the text nor follows or starts
with a space; an unknown token starts a word. none: every token, its label;
simple: tokens grouped; first/average/max: tokens first merged into words
(the first token's label; the label of the mean scores; the label of the
token with the highest score), then grouped. Grouping: B- starts an entity,
I- (or a bare label) continues one of the same type; the group's type is its
first label after the first '-', its score the mean. "O" is dropped. IOBES
labels (E-/L- end an entity, S-/U- are one alone) are Shoal's extension,
written here from the scheme.

Text classification: softmax over the logits, or a sigmoid per label when
problem_type is multi_label_classification or there is one label; best
first (stable), the first top_k (0: all).
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_reference import load_encoder  # noqa: E402


def tokenizer_rules(model_dir):
    """(id -> piece, continuing-subword prefix or None, unk id or None)."""
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    model = tok["model"]
    pieces = {}
    if model["type"] == "Unigram":
        pieces = {i: p[0] for i, p in enumerate(model["vocab"])}
        unk = model.get("unk_id")
    else:
        pieces = {i: p for p, i in model["vocab"].items()}
        unk = model["vocab"].get(model.get("unk_token")) if model.get("unk_token") else None
    for added in tok.get("added_tokens", []):
        pieces[added["id"]] = added["content"]
    prefix = model.get("continuing_subword_prefix")
    if model["type"] == "WordPiece" and prefix is None:
        prefix = "##"
    return pieces, prefix, unk


def char_offsets(text, start, end):
    """Byte offsets to character offsets; a token holding part of a character
    covers the whole character (as Hugging Face tokenizers' offsets do)."""
    first_bytes = [i for i, b in enumerate(text.encode("utf-8")) if b & 0xC0 != 0x80]
    chars_before = lambda b: sum(1 for i in first_bytes if i < b)  # noqa: E731
    return chars_before(start + 1) - 1 if start < len(text.encode("utf-8")) else len(text), chars_before(end)


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def tag(label):
    if len(label) > 2 and label[1] == "-" and label[0] in "BIELSU":
        return {"L": "E", "U": "S"}.get(label[0], label[0]), label[2:]
    return "I", label


def group(parts, labels):
    """parts: [(label index, score, start, end)] -> entities (type, mean score, start, end)."""
    out, i = [], 0
    while i < len(parts):
        j = i + 1
        last = tag(labels[parts[i][0]])
        while j < len(parts):
            t = tag(labels[parts[j][0]])
            if not (t[0] in "IE" and last[0] not in "ES" and t[1] == last[1]):
                break
            last = t
            j += 1
        name = labels[parts[i][0]].split("-", 1)[-1]
        out.append((name, float(np.mean([p[1] for p in parts[i:j]])), parts[i][2], parts[j - 1][3]))
        i = j
    return out


def entities(text, item, logits, labels, rules, aggregation):
    pieces, prefix, unk = rules
    tokens = []  # (scores, start, end, is_subword)
    margin = 1.0
    for k, token_id in enumerate(item["ids"]):
        if item["special"][k]:
            continue
        scores = softmax(logits[k])
        top = np.sort(scores)[::-1]
        margin = min(margin, float(top[0] - top[1]))
        start, end = char_offsets(text, *item["offsets"][k])
        word_ref = text[start:end]
        if prefix:
            subword = len(pieces[token_id]) != len(word_ref)
        else:
            subword = start > 0 and " " not in text[start - 1:start + 1]
        if token_id == unk:
            subword = False
        tokens.append((scores, start, end, subword))
    if aggregation in ("none", "simple"):
        parts = [(int(np.argmax(s)), float(s.max()), a, b) for s, a, b, _ in tokens]
    else:
        words = []
        for t in tokens:
            if words and t[3]:
                words[-1].append(t)
            else:
                words.append([t])
        parts = []
        for w in words:
            if aggregation == "first":
                s = w[0][0]
            elif aggregation == "max":
                s = max(w, key=lambda t: t[0].max())[0]
            else:
                s = np.mean([t[0] for t in w], axis=0)
            k = int(np.argmax(s))
            parts.append((k, float(s[k]), w[0][1], w[-1][2]))
    if aggregation == "none":
        found = [(labels[k], score, a, b) for k, score, a, b in parts]
    else:
        found = group(parts, labels)
    return {"entities": [{"label": name, "score": score, "start": a, "end": b, "text": text[a:b]}
                         for name, score, a, b in found if name != "O"],
            "margin": margin}


def ranked_labels(logits, labels, multi_label, top_k):
    if multi_label or len(logits) == 1:
        scores = 1.0 / (1.0 + np.exp(-logits))
    else:
        scores = softmax(logits)
    order = sorted(range(len(scores)), key=lambda k: -scores[k])
    if top_k:
        order = order[:top_k]
    return {"labels": [{"label": labels[k], "score": float(scores[k])} for k in order]}


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    model_dir, in_path, out_path = argv
    enc = load_encoder(model_dir)
    cfg = enc.cfg
    n = len(cfg["id2label"])
    labels = [cfg["id2label"][str(i)] for i in range(n)]
    multi_label = cfg.get("problem_type") == "multi_label_classification"
    rules = tokenizer_rules(model_dir)
    with open(in_path, encoding="utf-8") as f:
        request = json.load(f)
    outputs = []
    with torch.no_grad():
        for item in request["inputs"]:
            ids = item["ids"]
            logits = enc.run(ids, [0] * len(ids)).numpy()
            if enc.token_classifier:
                outputs.append(entities(item["text"], item, logits.reshape(len(ids), n), labels, rules,
                                        request.get("aggregation", "simple")))
            else:
                outputs.append(ranked_labels(logits, labels, multi_label, request.get("top_k", 0)))
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"outputs": outputs}, f, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
