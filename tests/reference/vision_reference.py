#!/usr/bin/python3
"""Reference image towers in float64 (Debian's torch), written from the
architectures (transformers' modeling_clip.py, modeling_siglip.py and
modeling_vit.py as documented), not from Shoal's code: CLIP's vision model
with its projection, SigLIP's vision model with its attention-pooling head,
and ViTForImageClassification.

usage: vision_reference.py MODEL_DIR PIXELS.f32 COUNT OUT.json

PIXELS.f32: COUNT images of pixel values, float32, each channels x size x size
(what the image processor gives). OUT.json: {"outputs": [[...], ...]} — CLIP's
or SigLIP's image embeddings (not normalized) or ViT's logits, one list per
image.

The tower: patches by a convolution of kernel and stride patch_size (bias: ViT
only); a class token in front; position embeddings added; CLIP: pre_layrnorm;
each layer x += attn(LN1(x)), x += fc2(act(fc1(LN2(x)))) with softmax(q k^T /
sqrt(d)) v per head; act quick_gelu x * sigmoid(1.702 x) or GELU (erf);
the class token through post_layernorm and visual_projection (CLIP) or the
final layernorm and the classifier (ViT). SigLIP: no class token, GELU's
tanh form; every state through post_layernorm, then the head: a probe
attends over them (torch.nn.MultiheadAttention's math: in_proj split into
q, k, v; softmax(q k^T / sqrt(d)) v per head; out_proj), then
h + fc2(gelu_tanh(fc1(LN(h)))).
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_tensors  # noqa: E402


def main(model_dir, pixels_path, count, out_path):
    config = json.load(open(os.path.join(model_dir, "config.json")))
    arch = config["architectures"][0]
    clip, siglip = arch.startswith("CLIP"), arch.startswith("Siglip")
    c = config["vision_config"] if "vision_config" in config else config
    w = {k: torch.from_numpy(v) for k, v in read_tensors(os.path.join(model_dir, "model.safetensors"),
                                                          dtype=np.float64).items()}
    h, heads, size, p = c["hidden_size"], c["num_attention_heads"], c["image_size"], c["patch_size"]
    eps = c["layer_norm_eps"]
    pixels = torch.from_numpy(np.fromfile(pixels_path, dtype=np.float32).astype(np.float64))
    pixels = pixels.reshape(count, 3, size, size)
    act = {"quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
           "gelu": lambda x: torch.nn.functional.gelu(x),
           "gelu_pytorch_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh")}[c["hidden_act"]]
    ln = lambda x, name: torch.nn.functional.layer_norm(x, (h,), w[name + ".weight"], w[name + ".bias"], eps)
    lin = lambda x, name: x @ w[name + ".weight"].T + (w[name + ".bias"] if name + ".bias" in w else 0)

    b = "vit." if not (clip or siglip) else "vision_model."
    if clip or siglip:
        kernel, bias = w[b + "embeddings.patch_embedding.weight"], w.get(b + "embeddings.patch_embedding.bias")
    else:
        kernel, bias = w[b + "embeddings.patch_embeddings.projection.weight"], \
            w[b + "embeddings.patch_embeddings.projection.bias"]
    x = torch.nn.functional.conv2d(pixels, kernel, bias, stride=p).flatten(2).transpose(1, 2)  # [B, N, H]
    if not siglip:
        cls = w[b + ("embeddings.class_embedding" if clip else "embeddings.cls_token")].reshape(1, 1, h)
        x = torch.cat([cls.expand(count, 1, h), x], dim=1)
    x = x + w[b + ("embeddings.position_embeddings" if not (clip or siglip) else
                   "embeddings.position_embedding.weight")].reshape(1, -1, h)
    if clip:
        x = ln(x, b + "pre_layrnorm")
    d = h // heads
    for i in range(c["num_hidden_layers"]):
        if clip or siglip:
            l = f"{b}encoder.layers.{i}."
            names = dict(n1="layer_norm1", q="self_attn.q_proj", k="self_attn.k_proj", v="self_attn.v_proj",
                         o="self_attn.out_proj", n2="layer_norm2", f1="mlp.fc1", f2="mlp.fc2")
        else:
            l = f"{b}encoder.layer.{i}."
            names = dict(n1="layernorm_before", q="attention.attention.query", k="attention.attention.key",
                         v="attention.attention.value", o="attention.output.dense", n2="layernorm_after",
                         f1="intermediate.dense", f2="output.dense")
        y = ln(x, l + names["n1"])
        split = lambda t: t.reshape(count, -1, heads, d).transpose(1, 2)
        q, k, v = (split(lin(y, l + names[n])) for n in ("q", "k", "v"))
        a = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5, dim=-1) @ v
        x = x + lin(a.transpose(1, 2).reshape(count, -1, h), l + names["o"])
        x = x + lin(act(lin(ln(x, l + names["n2"]), l + names["f1"])), l + names["f2"])
    if siglip:
        x = ln(x, b + "post_layernorm")
        hd = b + "head."
        wq, wk, wv = w[hd + "attention.in_proj_weight"].chunk(3)
        bq, bk, bv = w[hd + "attention.in_proj_bias"].chunk(3)
        q = (w[hd + "probe"].reshape(1, 1, h) @ wq.T + bq).expand(count, 1, h)
        split = lambda t: t.reshape(count, -1, heads, d).transpose(1, 2)
        a = torch.softmax(split(q) @ split(x @ wk.T + bk).transpose(-1, -2) / d ** 0.5, dim=-1) @ split(x @ wv.T + bv)
        y = lin(a.transpose(1, 2).reshape(count, 1, h), hd + "attention.out_proj")
        y = y + lin(act(lin(ln(y, hd + "layernorm"), hd + "mlp.fc1")), hd + "mlp.fc2")
        out = y[:, 0]
    elif clip:
        out = lin(ln(x[:, 0], b + "post_layernorm"), "visual_projection")
    else:
        out = lin(ln(x, b + "layernorm")[:, 0], "classifier")
    json.dump({"outputs": out.tolist()}, open(out_path, "w"))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
