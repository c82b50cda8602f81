#!/usr/bin/env python3
"""Issue 23's encoders through Shoal against sentence-transformers itself.

usage: transformers_fleet_check.py --shoal BIN --models DIR [--names a,b,...] [--port 18090]

The float64 references (tests/reference/*_reference.py) are written from the
architectures; this checks the same seeded models against the library their
users run: sentence-transformers' SentenceTransformer (dense) and
SparseEncoder (SPLADE) on transformers, in float32 on the GPU when there is
one. Each model goes through the whole serving path of the CPU runtime —
`shoal up` with a profile per model, /v1/embeddings or /v1/encode — on the
same texts, one text per call on both sides (so no padding is involved).

Dense: cosine >= 0.9999 per text, and max |difference| <= 1e-3 (unit
vectors). Sparse: the same nonzero vocabulary entries, each weight within
1e-3 · the largest. Prints one line per model; a model the library cannot
load is reported and counted as failed (the seeded directories are meant to
be in the exact Hugging Face layout).

Exit status 0 when every model matched. Run by scripts/gpu-check, where
sentence-transformers and a GPU are present; needs nothing but a Python with
sentence-transformers otherwise.
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoal_up  # noqa: E402

# The seeded models checked, and the output compared.
MODELS = {
    "bert-tiny-mean": "dense",
    "roberta-tiny": "dense",
    "bert-tiny-f16": "dense",
    "xlmr-tiny": "dense",
    "modernbert-tiny": "dense",
    "deberta-v3-tiny": "dense",
    "qwen3-embed-tiny": "dense",
    "splade-tiny": "sparse",
    "distilbert-tiny": "dense",
    "distilbert-splade-tiny": "sparse",
    "splade-modernbert-tiny": "sparse",
    "mpnet-tiny": "dense",
    "electra-tiny": "dense",
}

TEXTS = [
    "the river ran past the old mill",
    "a cat sat on the mat and watched the birds",
    "Quarterly revenue rose 12% on strong demand.",
    "où est la gare ? 東京 is far",
]


def log(msg):
    print(f"transformers_fleet_check: {msg}", file=sys.stderr, flush=True)


def load_st(cls, path, device):
    import torch
    try:
        return cls(path, device=device, model_kwargs={"dtype": torch.float32})
    except TypeError:
        return cls(path, device=device, model_kwargs={"torch_dtype": torch.float32})


def check_dense(url, name, path, device):
    from sentence_transformers import SentenceTransformer
    model = load_st(SentenceTransformer, path, device)
    worst_cos, worst_abs = 1.0, 0.0
    for text in TEXTS:
        want = model.encode([text], batch_size=1, convert_to_numpy=True)[0].astype("float64")
        got = shoal_up.post(url + "/v1/embeddings", {"model": name, "input": text})["data"][0]["embedding"]
        dot = sum(a * b for a, b in zip(got, want))
        norm = (sum(a * a for a in got) * sum(b * b for b in want)) ** 0.5
        worst_cos = min(worst_cos, dot / norm)
        worst_abs = max(worst_abs, max(abs(a - b) for a, b in zip(got, want)))
    ok = worst_cos >= 0.9999 and worst_abs <= 1e-3
    return ok, f"min cosine {worst_cos:.6f}, max |diff| {worst_abs:.2e}"


def check_sparse(url, name, path, device):
    from sentence_transformers import SparseEncoder
    model = load_st(SparseEncoder, path, device)
    worst, mismatched = 0.0, 0
    for text in TEXTS:
        vec = model.encode([text], batch_size=1, convert_to_tensor=True)[0].coalesce()
        want = {int(i): float(v) for i, v in zip(vec.indices()[0].tolist(), vec.values().tolist()) if v != 0}
        answer = shoal_up.post(url + f"/v1/encode/{name}", {"items": [{"text": text}], "output": "sparse"})
        item = answer["items"][0]
        got = dict(zip(item["sparse"]["indices"], item["sparse"]["values"]))
        scale = max(want.values(), default=1.0)
        # Entries within rounding of zero may be on one side only.
        for i in set(want) | set(got):
            d = abs(got.get(i, 0.0) - want.get(i, 0.0))
            worst = max(worst, d / scale)
            if (i in want) != (i in got) and max(got.get(i, 0.0), want.get(i, 0.0)) > 1e-3 * scale:
                mismatched += 1
    ok = worst <= 1e-3 and mismatched == 0
    return ok, f"max |diff| {worst:.2e} of the largest weight, {mismatched} entries on one side only"


def profile(name, path):
    return (f"id: {name}\nruntime: native\npath: {path}\ntask: encode\npool: default\n"
            f"outputs: [{MODELS.get(name, 'dense')}]\n"
            f"max_input_tokens: 128\nbatching:\n  max_batch_tokens: 4096\n  max_batch_requests: 16\n"
            f"  max_batch_wait_ms: 0\npinned: true\n")


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--shoal", required=True)
    ap.add_argument("--models", required=True, help="the directory scripts/make-test-models wrote")
    ap.add_argument("--names", default=",".join(MODELS))
    ap.add_argument("--port", type=int, default=18090)
    args = ap.parse_args(argv)
    import torch
    import sentence_transformers
    import transformers
    device = "cuda" if torch.cuda.is_available() else "cpu"
    log(f"sentence-transformers {sentence_transformers.__version__}, transformers {transformers.__version__}, "
        f"torch {torch.__version__} on {device}")

    names = [n for n in args.names.split(",") if n]
    work = tempfile.mkdtemp(prefix="shoal-fleet-")
    profile_dir = os.path.join(work, "models")
    os.makedirs(profile_dir)
    for n in names:
        with open(os.path.join(profile_dir, n + ".yaml"), "w") as f:
            f.write(profile(n, os.path.abspath(os.path.join(args.models, n))))

    def check(url, n):
        path = os.path.abspath(os.path.join(args.models, n))
        return (check_sparse if MODELS.get(n) == "sparse" else check_dense)(url, n, path, device)

    return shoal_up.check_each(args.shoal, profile_dir, work, args.port, names, check, "match sentence-transformers")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
