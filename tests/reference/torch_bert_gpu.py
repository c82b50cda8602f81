#!/usr/bin/env python3
"""Forward pass of a BERT-family encoder with Hugging Face transformers, on the GPU.

usage: torch_bert_gpu.py MODEL_DIR IN.json OUT.json [--dtype f32|bf16|f32,bf16] [--device cuda|cpu]

IN.json:  {"inputs": [{"ids": [...], "type_ids": [...]}, ...]}   (token ids, no tokenizer)
OUT.json: {"outputs": [[floats...], ...], "by_dtype": {"f32": [[...]], ...},
           "torch": ..., "transformers": ..., "device": ...}
  "outputs" holds the first dtype's; "by_dtype" each one asked for (one
  process for several, since importing torch and transformers costs seconds).
  embedding models: the pooled vector, L2-normalized when the model normalizes;
  sequence classifiers: the num_labels logits.

The same protocol as bert_reference.py, but the model is transformers' own
module (AutoModel for BertModel / RobertaModel, AutoModelForSequenceClassification
for the *ForSequenceClassification architectures) with SDPA attention, and all
inputs run as ONE right-padded batch with an attention mask: the check for
Shoal's CUDA backend, whose kernels batch and mask the same way. Pooling and
normalization follow bert_reference.py's rules, computed in float32.
"""
import argparse
import json
import os
import sys

import torch
import transformers
from transformers import AutoModel, AutoModelForSequenceClassification

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_reference import read_sentence_transformers  # noqa: E402

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def load(model_dir, dtype, device):
    with open(os.path.join(model_dir, "config.json")) as f:
        arch = (json.load(f).get("architectures") or [""])[0]
    classifier = arch.endswith("ForSequenceClassification")
    cls = AutoModelForSequenceClassification if classifier else AutoModel
    try:  # transformers >= 4.56 names it dtype; older ones torch_dtype
        model = cls.from_pretrained(model_dir, dtype=dtype, attn_implementation="sdpa")
    except TypeError:
        model = cls.from_pretrained(model_dir, torch_dtype=dtype, attn_implementation="sdpa")
    return model.eval().to(device), classifier


def batch(inputs, pad_id, device):
    """Right-padded ids, type ids (0 in the padding) and the attention mask."""
    width = max(len(item["ids"]) for item in inputs)
    ids = torch.full((len(inputs), width), pad_id, dtype=torch.long)
    types = torch.zeros((len(inputs), width), dtype=torch.long)
    mask = torch.zeros((len(inputs), width), dtype=torch.long)
    for row, item in enumerate(inputs):
        n = len(item["ids"])
        type_ids = item.get("type_ids") or [0] * n
        if len(type_ids) != n:
            raise ValueError(f"input {row}: ids and type_ids differ in length")
        ids[row, :n] = torch.tensor(item["ids"])
        types[row, :n] = torch.tensor(type_ids)
        mask[row, :n] = 1
    return ids.to(device), types.to(device), mask.to(device)


def run(model_dir, inputs, dtype, device):
    """The outputs of the model at `dtype` for all inputs, as lists of floats."""
    model, classifier = load(model_dir, dtype, device)
    if not classifier:
        pooling, normalize = read_sentence_transformers(model_dir)
        normalize = normalize or os.path.isdir(os.path.join(model_dir, "2_Normalize"))
        if pooling not in ("cls", "mean"):
            raise ValueError(f"pooling {pooling!r} not handled (cls or mean)")
    pad_id = model.config.pad_token_id if model.config.pad_token_id is not None else 0
    ids, types, mask = batch(inputs, pad_id, device)

    with torch.inference_mode():
        out = model(input_ids=ids, attention_mask=mask, token_type_ids=types)
        if classifier:
            result = out.logits.float()
        else:
            h = out.last_hidden_state.float()
            if pooling == "cls":
                result = h[:, 0]
            else:  # mean over the real tokens only
                m = mask.unsqueeze(-1).float()
                result = (h * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)
            if normalize:
                result = result / result.norm(dim=-1, keepdim=True).clamp(min=1e-12)
        return result.cpu().tolist()


def main(argv):
    ap = argparse.ArgumentParser(usage=__doc__.strip().splitlines()[2][len("usage: "):])
    ap.add_argument("model_dir")
    ap.add_argument("in_json")
    ap.add_argument("out_json")
    ap.add_argument("--dtype", default="f32", help="f32, bf16, or both comma-separated")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch_bert_gpu.py: --device cuda, but torch sees no CUDA device "
              f"(torch {torch.__version__}); use --device cpu to run on the CPU", file=sys.stderr)
        return 1
    device = torch.device(args.device)

    dtypes = args.dtype.split(",")
    if not dtypes or any(d not in DTYPES for d in dtypes):
        ap.error(f"--dtype: expected a comma-separated list of {sorted(DTYPES)}")
    with open(args.in_json) as f:
        inputs = json.load(f)["inputs"]
    by_dtype = {d: run(args.model_dir, inputs, DTYPES[d], device) for d in dtypes}

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    with open(args.out_json, "w") as f:
        json.dump({"outputs": by_dtype[dtypes[0]], "by_dtype": by_dtype, "torch": torch.__version__,
                   "transformers": transformers.__version__, "device": name}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
