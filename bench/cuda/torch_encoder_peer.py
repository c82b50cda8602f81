#!/usr/bin/env python3
"""PyTorch peer for the CUDA encoder throughput benchmark.

usage: torch_encoder_peer.py MODEL_DIR --seq-len N --batches 1,2,4,8 [--min-seconds 0.5] [--seed 0] [--compile]

Runs the encoder body as transformers builds it (AutoModel, bfloat16 weights,
SDPA attention, eval, CUDA) under torch.inference_mode() on seeded random
token ids (above the special and pad ids), an all-ones attention mask and
zero token type ids. For each batch size: 3 warm-up forwards, then forwards
until --min-seconds have passed, each timed alone between
torch.cuda.synchronize() calls; the median gives ms per batch and tokens/s.
The sweep stops at the first batch size that runs out of GPU memory.
With --compile the model runs under torch.compile (default mode, static
shapes: each batch size compiles in its warm-ups, which are not timed).

Progress goes to stderr; stdout is one JSON object:
{"peer":"pytorch","torch":...,"transformers":...,"device":...,"attention":"sdpa",
 "dtype":"bf16","compiled":bool,"seq_len":N,"points":[{"batch":b,"ms_median":x,"tokens_per_s":y},...]}
plus "oom_at_batch": b when the sweep stopped early.
"""
import argparse
import json
import statistics
import sys
import time

import torch
import transformers
from transformers import AutoModel


def log(msg):
    print(f"torch_encoder_peer: {msg}", file=sys.stderr, flush=True)


def load(model_dir):
    try:  # transformers >= 4.56 names it dtype; older ones torch_dtype
        model = AutoModel.from_pretrained(model_dir, dtype=torch.bfloat16,
                                          attn_implementation="sdpa")
    except TypeError:
        model = AutoModel.from_pretrained(model_dir, torch_dtype=torch.bfloat16,
                                          attn_implementation="sdpa")
    return model.eval().to("cuda")


def measure(model, ids, min_seconds):
    """Median seconds of one forward, after 3 warm-ups."""
    mask = torch.ones_like(ids)
    types = torch.zeros_like(ids)

    def forward():
        model(input_ids=ids, attention_mask=mask, token_type_ids=types)

    for _ in range(3):
        forward()
    torch.cuda.synchronize()
    times = []
    start = time.perf_counter()
    while not times or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        forward()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), len(times)


def main(argv):
    ap = argparse.ArgumentParser(usage=__doc__.strip().splitlines()[2][len("usage: "):])
    ap.add_argument("model_dir")
    ap.add_argument("--seq-len", type=int, required=True)
    ap.add_argument("--batches", required=True, help="comma-separated batch sizes")
    ap.add_argument("--min-seconds", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compile", action="store_true", help="run the model under torch.compile")
    args = ap.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",") if b]
    if not torch.cuda.is_available():
        print("torch_encoder_peer.py: torch sees no CUDA device", file=sys.stderr)
        return 1

    model = load(args.model_dir)
    vocab = model.config.vocab_size
    attention = getattr(model.config, "_attn_implementation", "?")
    if args.compile:
        model = torch.compile(model)
    low = 1000 if vocab > 1000 else vocab // 2  # tiny test vocabularies have < 1000 ids
    gen = torch.Generator().manual_seed(args.seed)
    result = {"peer": "pytorch", "torch": torch.__version__,
              "transformers": transformers.__version__, "device": torch.cuda.get_device_name(),
              "attention": "sdpa", "dtype": "bf16", "compiled": args.compile, "seq_len": args.seq_len,
              "points": []}
    log(f"{args.model_dir}: {result['device']}, torch {torch.__version__}, "
        f"transformers {transformers.__version__}, "
        f"attention {attention}"
        f"{', under torch.compile' if args.compile else ''}")
    with torch.inference_mode():
        for b in batches:
            ids = torch.randint(low, vocab, (b, args.seq_len), generator=gen).to("cuda")
            try:
                median, runs = measure(model, ids, args.min_seconds)
            except torch.cuda.OutOfMemoryError:
                median = None  # freed below, once the traceback no longer holds the tensors
            if median is None:
                del ids
                torch.cuda.empty_cache()
                log(f"batch {b}: out of GPU memory; sweep stopped")
                result["oom_at_batch"] = b
                break
            point = {"batch": b, "ms_median": round(median * 1e3, 4),
                     "tokens_per_s": round(b * args.seq_len / median, 1)}
            result["points"].append(point)
            log(f"batch {b}: {point['ms_median']:.3f} ms median of {runs}, "
                f"{point['tokens_per_s']:.0f} tokens/s")
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
