#!/usr/bin/env python3
"""Issue 22's PyTorch runtime on Hugging Face directories, against transformers itself.

usage: transformers_runtime_check.py --shoal BIN --models DIR [--port 18092]

A checkpoint whose model_type the native runtime does not run registers on
the pytorch runtime, which loads it with transformers (the base class its
config.json names, or AutoModel, to encode; AutoModelForSequenceClassification
to score). This makes three such checkpoints with transformers itself,
seeded, in the exact Hugging Face layout:

  albert-tiny      an AlbertModel (factorised embeddings, one layer shared
                   by all), with bert-tiny-mean's tokenizer and
                   sentence-transformers files (mean pooling, normalised);
  t5-encoder-tiny  a T5EncoderModel (gtr-t5's and sentence-t5's class:
                   relative position buckets, RMS norms), the same files;
  deberta-tiny     a DebertaForSequenceClassification (DeBERTa v1, which the
                   native runtime refuses; v2/v3 it runs), one label, with
                   cross-encoder-tiny's tokenizer;

registers each through /v1/admin/models of `shoal up` as a user would (the
runtime and task inferred: both must say pytorch), and compares Shoal's
answers through the whole serving path (gateway → JetStream → worker →
sidecar, several texts of different lengths in one padded batch) with the
library's, each text alone, on token ids from the `tokenizers` library and
the directory's own tokenizer.json: embeddings by cosine >= 0.9999 and max
|difference| <= 1e-3 (unit vectors), cross-encoder logits (raw_scores)
within 1e-3 · max(1, |logit|).

The sidecar runs under $SHOAL_PYTORCH_PYTHON (default /usr/bin/python3),
which must import transformers (scripts/gpu-check points it at its own
Python, and skips this check where that cannot). Exit status 0 when all
three matched.
"""
import argparse
import json
import math
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoal_up  # noqa: E402

TEXTS = ["the river ran past the old mill", "a cat sat on the mat", "fish", "where is the mill?"]
QUERY = "where is the mill"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def log(msg):
    print(f"transformers_runtime_check: {msg}", file=sys.stderr, flush=True)


def copy_files(src, dst, names):
    for n in names:
        p = os.path.join(src, n)
        if os.path.isdir(p):
            shutil.copytree(p, os.path.join(dst, n))
        elif os.path.isfile(p):
            shutil.copy(p, dst)


def make_models(seeded, out):
    """The two checkpoints: {name: (dir, task)}."""
    import torch
    import transformers as tf
    torch.manual_seed(22)
    vocab = json.load(open(os.path.join(seeded, "bert-tiny-mean", "config.json")))["vocab_size"]
    small = dict(vocab_size=vocab, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, max_position_embeddings=128, type_vocab_size=2, pad_token_id=0)
    albert = os.path.join(out, "albert-tiny")
    tf.AlbertModel(tf.AlbertConfig(embedding_size=32, **small)).save_pretrained(albert)
    copy_files(os.path.join(seeded, "bert-tiny-mean"), albert,
               TOKENIZER_FILES + ("modules.json", "sentence_bert_config.json", "1_Pooling", "2_Normalize"))
    t5 = os.path.join(out, "t5-encoder-tiny")
    tf.T5EncoderModel(tf.T5Config(vocab_size=vocab, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
                                  pad_token_id=0)).save_pretrained(t5)
    copy_files(os.path.join(seeded, "bert-tiny-mean"), t5,
               TOKENIZER_FILES + ("modules.json", "sentence_bert_config.json", "1_Pooling", "2_Normalize"))
    cross_vocab = json.load(open(os.path.join(seeded, "cross-encoder-tiny", "config.json")))["vocab_size"]
    deberta = os.path.join(out, "deberta-tiny")
    config = tf.DebertaConfig(relative_attention=True, pos_att_type=["c2p", "p2c"], max_relative_positions=64,
                              num_labels=1, **dict(small, vocab_size=cross_vocab))
    tf.DebertaForSequenceClassification(config).save_pretrained(deberta)
    copy_files(os.path.join(seeded, "cross-encoder-tiny"), deberta, TOKENIZER_FILES)
    return {"albert-tiny": (albert, "encode"), "t5-encoder-tiny": (t5, "encode"), "deberta-tiny": (deberta, "score")}


def unit(v):
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


class Library:
    """The checkpoint as the class it was saved as, float32, fed the tokenizers library's ids."""

    def __init__(self, path, device):
        import inspect
        import torch
        import tokenizers
        import transformers as tf
        self.torch, self.device = torch, device
        self.tok = tokenizers.Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
        cls = getattr(tf, json.load(open(os.path.join(path, "config.json")))["architectures"][0])
        self.model = cls.from_pretrained(path, dtype=torch.float32).to(device).eval()
        self.takes = inspect.signature(self.model.forward).parameters

    def run(self, enc):
        t = self.torch
        feed = {"input_ids": enc.ids, "attention_mask": enc.attention_mask, "token_type_ids": enc.type_ids}
        with t.inference_mode():
            return self.model(**{k: t.tensor([v], device=self.device) for k, v in feed.items() if k in self.takes})

    def embedding(self, text):
        hidden = self.run(self.tok.encode(text)).last_hidden_state[0].double()
        return unit(hidden.mean(dim=0).tolist())  # mean pooling, every token attended

    def logit(self, query, text):
        return float(self.run(self.tok.encode(query, text)).logits[0, 0])


def check(url, name, path, task, device):
    registered = shoal_up.register(url, name, path)
    runtime = registered.get("runtime")
    if runtime != "pytorch" or registered.get("task") != task:
        return False, f"registered on {runtime!r} as {registered.get('task')!r}, not pytorch / {task}"
    lib = Library(path, device)
    if task == "encode":
        cos, diff = 1.0, 0.0
        # One call: the texts run as one padded batch in the sidecar, each alone in the library.
        data = shoal_up.post(url + "/v1/embeddings", {"model": name, "input": TEXTS})["data"]
        for text, item in zip(TEXTS, sorted(data, key=lambda d: d["index"])):
            got, want = unit(item["embedding"]), lib.embedding(text)
            cos = min(cos, sum(a * b for a, b in zip(got, want)))
            diff = max(diff, max(abs(a - b) for a, b in zip(got, want)))
        return cos >= 0.9999 and diff <= 1e-3, f"min cosine {cos:.6f}, max |diff| {diff:.2e}"
    got = shoal_up.post(url + f"/v1/score/{name}", {"query": QUERY, "texts": TEXTS, "raw_scores": True})["scores"]
    worst = max(abs(g - lib.logit(QUERY, t)) / max(1.0, abs(lib.logit(QUERY, t))) for g, t in zip(got, TEXTS))
    return worst <= 1e-3, f"logits: max relative diff {worst:.2e}"


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--shoal", required=True)
    ap.add_argument("--models", required=True, help="the directory scripts/make-test-models wrote "
                    "(bert-tiny-mean and cross-encoder-tiny lend their tokenizers)")
    ap.add_argument("--port", type=int, default=18092)
    args = ap.parse_args(argv)
    import torch
    import transformers
    device = "cuda" if torch.cuda.is_available() else "cpu"
    log(f"transformers {transformers.__version__}, torch {torch.__version__} on {device}")

    work = tempfile.mkdtemp(prefix="shoal-transformers-")
    models = make_models(os.path.abspath(args.models), work)
    profile_dir = os.path.join(work, "profiles")  # none: each model is registered as a user would
    os.makedirs(profile_dir)

    def check_one(url, n):
        return check(url, n, *models[n], device)

    return shoal_up.check_each(args.shoal, profile_dir, work, args.port, list(models), check_one,
                               "match transformers")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
