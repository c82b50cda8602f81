#!/usr/bin/python3
"""Exports the torch peer's module to ONNX for the onnxruntime peer.

usage: export_onnx.py MODEL_DIR OUT.onnx

torch.onnx.export (TorchScript tracing, opset 14) of tests/reference/encoder_module.py's
load_module (the BERT family's Encoder, or modernbert_module.py's),
inputs input_ids / attention_mask / token_type_ids (int64, [batch, seq], both
axes dynamic), output "output" (the pooled embedding or the logits). Debian's
torch 1.13 serializes the protobuf in C++, so the `onnx` Python package is not
needed.

Also writes OUT.onnx.check.json: a padded 3 x 37 input (a different shape
from the export's dummy, so the dynamic axes are exercised) with the torch
module's output on it; ort_peer.mjs runs the same input and prints the
maximum absolute difference, so both peers are known to compute one model.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "reference"))
from encoder_module import load_module  # noqa: E402

INPUTS = ["input_ids", "attention_mask", "token_type_ids"]


def example(model, batch, seq, seed, pad_rows=True):
    """Seeded random ids; row r (r > 0) is padded by 5*r tokens when pad_rows."""
    gen = torch.Generator().manual_seed(seed)
    vocab = model.cfg["vocab_size"]
    ids = torch.randint(min(1000, vocab // 2), vocab, (batch, seq), generator=gen)
    mask = torch.ones_like(ids)
    if pad_rows:
        for r in range(1, batch):
            n = max(1, seq - 5 * r)
            mask[r, n:] = 0
            ids[r, n:] = model.pad
    types = torch.zeros_like(ids)
    if model.cfg.get("type_vocab_size", 0) > 1:  # a second segment, as in a query/document pair
        types[:, seq // 2:] = 1
        types = types * mask
    return ids, mask, types


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    model_dir, out_path = argv
    model = load_module(model_dir).eval()
    dynamic = {name: {0: "batch", 1: "sequence"} for name in INPUTS}
    dynamic["output"] = {0: "batch"}
    with torch.no_grad():
        torch.onnx.export(model, example(model, 2, 16, seed=1), out_path, opset_version=14,
                          input_names=INPUTS, output_names=["output"], dynamic_axes=dynamic,
                          do_constant_folding=True)
        check_in = example(model, 3, 37, seed=2)
        check_out = model(*check_in)
    with open(out_path + ".check.json", "w") as f:
        json.dump({"shape": list(check_in[0].shape),
                   **{name: t.flatten().tolist() for name, t in zip(INPUTS, check_in)},
                   "output_shape": list(check_out.shape), "output": check_out.flatten().tolist()},
                  f)
    print(f"export_onnx: {out_path}: {os.path.getsize(out_path) / 1e6:.1f} MB, opset 14, "
          f"torch {torch.__version__} exporter (no onnx package)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
