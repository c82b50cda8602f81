#!/usr/bin/python3
"""Reference text towers of two-tower image-text models in float64 (Debian's
torch), written from the architectures (transformers' modeling_clip.py and
modeling_siglip.py as documented), not from Shoal's code.

usage: text_tower_reference.py MODEL_DIR IDS.json OUT.json

IDS.json: {"sequences": [[id, ...], ...]} (what the tokenizer gave, special
tokens included). OUT.json: {"outputs": [[...], ...], "logit_scale": exp of
the checkpoint's logit_scale, "logit_bias": SigLIP's (0 for CLIP)} — each
text's embedding, not normalized.

Every sequence runs padded to max_position_embeddings with pad_token_id, as
the models' processors pad with padding="max_length":
  - CLIP: attention causal and blind to the padding (the causal mask plus
    the padding mask, as CLIPTextTransformer builds them); pooled: the row of
    the largest id when eos_token_id is 2 (the original configs), else the
    first eos_token_id; then text_projection (no bias).
  - SigLIP: no mask at all (SigLIP attends to its padding, as trained);
    pooled: the last row; then the head (with bias).
Each layer: x += attn(LN1(x)), x += fc2(act(fc1(LN2(x)))); final_layer_norm.
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_tensors  # noqa: E402


def main(model_dir, ids_path, out_path):
    config = json.load(open(os.path.join(model_dir, "config.json")))
    clip = config["architectures"][0] == "CLIPModel"
    c = config["text_config"]
    w = {k: torch.from_numpy(v) for k, v in read_tensors(os.path.join(model_dir, "model.safetensors"),
                                                          dtype=np.float64).items()}
    h, heads, positions, eps = c["hidden_size"], c["num_attention_heads"], c["max_position_embeddings"], \
        c["layer_norm_eps"]
    act = {"quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
           "gelu": lambda x: torch.nn.functional.gelu(x),
           "gelu_pytorch_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh")}[c["hidden_act"]]
    ln = lambda x, name: torch.nn.functional.layer_norm(x, (h,), w[name + ".weight"], w[name + ".bias"], eps)
    lin = lambda x, name: x @ w[name + ".weight"].T + (w[name + ".bias"] if name + ".bias" in w else 0)
    b, d = "text_model.", h // heads
    outputs = []
    for seq in json.load(open(ids_path))["sequences"]:
        n = len(seq)
        ids = torch.tensor(seq + [c["pad_token_id"]] * (positions - n))
        x = w[b + "embeddings.token_embedding.weight"][ids] + w[b + "embeddings.position_embedding.weight"]
        mask = torch.zeros(positions, positions, dtype=torch.float64)
        if clip:
            i, j = torch.meshgrid(torch.arange(positions), torch.arange(positions), indexing="ij")
            mask[(j > i) | (j >= n)] = -float("inf")
        for layer in range(c["num_hidden_layers"]):
            l = f"{b}encoder.layers.{layer}."
            y = ln(x, l + "layer_norm1")
            split = lambda t: t.reshape(positions, heads, d).transpose(0, 1)
            q, k, v = (split(lin(y, l + "self_attn." + p)) for p in ("q_proj", "k_proj", "v_proj"))
            a = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5 + mask, dim=-1) @ v
            x = x + lin(a.transpose(0, 1).reshape(positions, h), l + "self_attn.out_proj")
            x = x + lin(act(lin(ln(x, l + "layer_norm2"), l + "mlp.fc1")), l + "mlp.fc2")
        x = ln(x, b + "final_layer_norm")
        if clip:
            eos = c.get("eos_token_id", 2)
            row = int(torch.argmax(ids[:n])) if eos == 2 else seq.index(eos) if eos in seq else 0
            outputs.append(lin(x[row], "text_projection").tolist())
        else:
            outputs.append(lin(x[positions - 1], b + "head").tolist())
    scale = float(torch.exp(w["logit_scale"].reshape(-1)[0]))
    bias = float(w["logit_bias"].reshape(-1)[0]) if "logit_bias" in w else 0.0
    json.dump({"outputs": outputs, "logit_scale": scale, "logit_bias": bias}, open(out_path, "w"))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3])
