#!/usr/bin/env python3
"""A GPU worker through the whole cluster (issue 28): `shoal up` serving a
BERT-family model with `native: {device: cuda}` through gateway -> JetStream
-> worker, checked against transformers, then measured with `shoal bench`
against the runtime alone (cuda_encoder_bench's figures, same GPU, same run).

usage: cluster_check.py --shoal BIN --model DIR --figures FILE [--work DIR]
                        [--torch-bert tests/reference/torch_bert_gpu.py] [--device cuda]
                        [--executors 4] [--levels 4,8,16,32,64,128] [--seconds 4]

1. Starts `shoal up` (its own nats-server, which must be on PATH) with one
   profile: the model on cuda:0, batches up to the runtime's knee.
2. Correctness: texts of 128 tokens (whole words of the model's vocab.txt,
   whose ids are known without Shoal's tokenizer) go through /v1/embeddings;
   the vectors must match transformers in fp32 (torch_bert_gpu.py, on those
   ids) with cosine >= 0.999 each.
3. Throughput: a closed-loop sweep of /v1/embeddings requests of 16 such
   texts with encoding_format base64 (what OpenAI's Python client sends);
   the knee's input tokens/s over the runtime alone's tokens_per_s_len128.
4. Latency: open loop at half the knee's request rate; p50 and p99.

Adds to FILE: cluster_tokens_per_s_len128, len128_cluster_over_runtime,
cluster_knee_concurrency, cluster_p50_ms_half_knee, cluster_p99_ms_half_knee.
Exit status 0 when every step ran and the answers matched.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "reference"))
import shoal_up  # noqa: E402

TEXT_TOKENS = 128    # per text, [CLS] and [SEP] included
TEXTS_PER_REQUEST = 16
DISTINCT_REQUESTS = 64


def log(msg):
    print(f"cluster_check: {msg}", file=sys.stderr, flush=True)


def make_texts(model_dir, count, seed):
    """`count` texts of TEXT_TOKENS - 2 whole, lowercase vocabulary words, and
    their token ids as WordPiece gives them ([CLS] w1 ... wn [SEP]: a whole
    word in the vocabulary is its own token), read from vocab.txt."""
    with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as f:
        vocab = {w: i for i, w in enumerate(f.read().splitlines())}
    words = [w for w in vocab if w.isascii() and w.isalpha() and w.islower()]
    rng = random.Random(seed)
    texts, ids = [], []
    for _ in range(count):
        picked = [rng.choice(words) for _ in range(TEXT_TOKENS - 2)]
        texts.append(" ".join(picked))
        ids.append([vocab["[CLS]"]] + [vocab[w] for w in picked] + [vocab["[SEP]"]])
    return texts, ids


def check_answers(url, model_id, model_dir, texts, ids, python, torch_bert, device, work):
    answer = shoal_up.post(url + "/v1/embeddings", {"model": model_id, "input": texts})
    vectors = [d["embedding"] for d in answer["data"]]
    src, dst = os.path.join(work, "ref-in.json"), os.path.join(work, "ref-out.json")
    with open(src, "w") as f:
        json.dump({"inputs": [{"ids": i, "type_ids": [0] * len(i)} for i in ids]}, f)
    subprocess.run([python, torch_bert, model_dir, src, dst, "--dtype", "f32", "--device", device], check=True)
    with open(dst) as f:
        want = json.load(f)["outputs"]
    worst = 1.0
    for got, ref in zip(vectors, want):
        dot = sum(a * b for a, b in zip(got, ref))
        norm = (sum(a * a for a in got) * sum(b * b for b in ref)) ** 0.5
        worst = min(worst, dot / norm)
    log(f"{len(texts)} texts through the cluster against transformers (fp32): min cosine {worst:.6f}")
    return len(vectors) == len(want) == len(texts) and worst >= 0.999


def bench(shoal, url, mix, args, out):
    cmd = [shoal, "bench", "--url", url, "--mix", mix, "--out", out, "--warmup", "1", "--no-progress"] + args
    log(" ".join(cmd))
    subprocess.run(cmd, check=True, stdout=sys.stderr)
    with open(out) as f:
        return json.load(f)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--shoal", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--figures", required=True)
    ap.add_argument("--work", default="")
    ap.add_argument("--torch-bert", default="tests/reference/torch_bert_gpu.py",
                    help="the transformers reference ('' to skip the check)")
    ap.add_argument("--device", default="cuda", help="where the model runs: cuda, or cpu for a dry run")
    ap.add_argument("--executors", type=int, default=4)
    ap.add_argument("--levels", default="4,8,16,32,64,128")
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--port", type=int, default=18080)
    args = ap.parse_args(argv)
    model_dir = os.path.abspath(args.model)
    work = args.work or tempfile.mkdtemp(prefix="shoal-cluster-")
    os.makedirs(work, exist_ok=True)
    with open(args.figures) as f:
        figures = json.load(f)
    runtime_tps = figures.get("tokens_per_s_len128")
    knee_batch = int(figures.get("knee_batch_len128", 512))

    model_id = "gpu-encoder"
    profile_dir = os.path.join(work, "models")
    os.makedirs(profile_dir, exist_ok=True)
    with open(os.path.join(profile_dir, "gpu-encoder.yaml"), "w") as f:
        f.write(f"""id: {model_id}
runtime: native
path: {model_dir}
task: encode
pool: default
description: "a BERT-family encoder on the GPU (cluster_check.py)"
max_input_tokens: {TEXT_TOKENS}
batching:
  max_batch_tokens: {knee_batch * TEXT_TOKENS}
  max_batch_requests: {max(1, knee_batch // TEXTS_PER_REQUEST)}
  max_batch_wait_ms: 0
pinned: true
native:
  device: {args.device}
""")
    texts, ids = make_texts(model_dir, TEXTS_PER_REQUEST * DISTINCT_REQUESTS, seed=1)
    mix = os.path.join(work, "mix.jsonl")
    with open(mix, "w") as f:
        for r in range(DISTINCT_REQUESTS):
            batch = texts[r * TEXTS_PER_REQUEST:(r + 1) * TEXTS_PER_REQUEST]
            f.write(json.dumps({"path": "/v1/embeddings", "body": {
                "model": model_id, "input": batch, "encoding_format": "base64"}}) + "\n")

    url = f"http://127.0.0.1:{args.port}"
    proc = shoal_up.start(args.shoal, profile_dir, work, args.port, ["--executors", str(args.executors)])
    if proc is None:
        log("shoal up did not come up")
        return 1
    ok = True
    try:
        if args.torch_bert:
            ok = check_answers(url, model_id, model_dir, texts[:8], ids[:8], sys.executable, args.torch_bert,
                               args.device, work)
        closed = bench(args.shoal, url, mix, ["--loop", "closed", "--levels", args.levels,
                                              "--duration", str(args.seconds)], os.path.join(work, "closed.json"))
        knee = closed["knee"]
        tps = knee["tokens_per_s"]
        rate = 0.5 * knee["throughput_rps"]
        opened = bench(args.shoal, url, mix, ["--loop", "open", "--levels", f"{rate:.1f}",
                                              "--duration", str(2 * args.seconds)], os.path.join(work, "open.json"))
        half = opened["levels"][0]
        figures["cluster_tokens_per_s_len128"] = tps
        figures["cluster_knee_concurrency"] = knee["offered"]
        figures["cluster_p50_ms_half_knee"] = half["p50_ms"]
        figures["cluster_p99_ms_half_knee"] = half["p99_ms"]
        line = (f"through the cluster: {tps:.0f} tokens/s at {knee['offered']:g} connections "
                f"({knee['throughput_rps']:.0f} req/s of {TEXTS_PER_REQUEST}x{TEXT_TOKENS} tokens)")
        if runtime_tps:
            figures["len128_cluster_over_runtime"] = tps / runtime_tps
            line += f"; the runtime alone {runtime_tps:.0f}: {tps / runtime_tps:.3f}x"
        print(line, flush=True)
        print(f"through the cluster at half the knee ({rate:.0f} req/s open loop): "
              f"p50 {half['p50_ms']:.2f} ms, p99 {half['p99_ms']:.2f} ms", flush=True)
        errors = sum(l.get("errors", 0) for l in closed["levels"]) + half.get("errors", 0)
        if errors:
            log(f"{errors} requests failed")
            ok = False
    except (OSError, subprocess.CalledProcessError, KeyError, ValueError) as e:
        log(f"failed: {e}")
        ok = False
    finally:
        shoal_up.stop(proc)
    with open(args.figures, "w") as f:
        json.dump(dict(sorted(figures.items())), f, indent=2)
        f.write("\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
