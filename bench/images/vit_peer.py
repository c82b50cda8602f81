#!/usr/bin/python3
"""PyTorch peer of the image-tower benchmark (bench/images.cc), and its ONNX export.

usage: vit_peer.py torch MODEL_DIR BATCH REPEATS THREADS
         the ViT as a standard eager module (nn.Conv2d patches, nn.Linear,
         nn.LayerNorm, matmul + softmax attention, GELU) in float32 under
         torch.inference_mode(), torch.set_num_threads(THREADS), on seeded
         random pixel values of BATCH images: one warm-up, then REPEATS timed
         batches. Last line: {"peer": "torch", "threads": T, "images_per_s": [...]}
       vit_peer.py export MODEL_DIR OUT.onnx
         the same module through torch.onnx.export (opset 14, dynamic batch),
         input pixel_values [B, 3, S, S], output logits [B, labels]

Debian's torch 1.13 runs its matmuls on OpenBLAS (threads from
OPENBLAS_NUM_THREADS, read when torch loads): bench/images.cc runs this twice,
torch at 1 and 2 threads with OpenBLAS at 2, and keeps the faster.
The weights are the model directory's (ViTForImageClassification's names);
the module computes what tests/reference/vision_reference.py computes.
"""
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "reference"))
from safetensors_io import read_tensors  # noqa: E402


class Vit(torch.nn.Module):
    def __init__(self, c, w):
        super().__init__()
        h, self.heads = c["hidden_size"], c["num_attention_heads"]
        p, self.eps = c["patch_size"], c["layer_norm_eps"]
        t = lambda name: torch.nn.Parameter(torch.from_numpy(w[name]), requires_grad=False)
        self.patch = torch.nn.Conv2d(3, h, p, stride=p)
        self.patch.weight, self.patch.bias = t("vit.embeddings.patch_embeddings.projection.weight"), \
            t("vit.embeddings.patch_embeddings.projection.bias")
        self.cls, self.pos = t("vit.embeddings.cls_token"), t("vit.embeddings.position_embeddings")

        def linear(name):
            m = torch.nn.Linear(1, 1)
            m.weight, m.bias = t(name + ".weight"), t(name + ".bias")
            return m

        def norm(name):
            m = torch.nn.LayerNorm(h, eps=self.eps)
            m.weight, m.bias = t(name + ".weight"), t(name + ".bias")
            return m

        self.layers = torch.nn.ModuleList()
        for i in range(c["num_hidden_layers"]):
            l = f"vit.encoder.layer.{i}."
            self.layers.append(torch.nn.ModuleDict(dict(
                n1=norm(l + "layernorm_before"), q=linear(l + "attention.attention.query"),
                k=linear(l + "attention.attention.key"), v=linear(l + "attention.attention.value"),
                o=linear(l + "attention.output.dense"), n2=norm(l + "layernorm_after"),
                f1=linear(l + "intermediate.dense"), f2=linear(l + "output.dense"))))
        self.norm, self.head = norm("vit.layernorm"), linear("classifier")

    def forward(self, pixel_values):
        b = pixel_values.shape[0]
        x = self.patch(pixel_values).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(b, -1, -1), x], dim=1) + self.pos
        h = x.shape[-1]
        d = h // self.heads
        for L in self.layers:
            y = L["n1"](x)
            split = lambda t: t.reshape(b, -1, self.heads, d).transpose(1, 2)
            q, k, v = split(L["q"](y)), split(L["k"](y)), split(L["v"](y))
            a = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5, dim=-1) @ v
            x = x + L["o"](a.transpose(1, 2).reshape(b, -1, h))
            x = x + L["f2"](torch.nn.functional.gelu(L["f1"](L["n2"](x))))
        return self.head(self.norm(x)[:, 0])


def load(model_dir):
    c = json.load(open(os.path.join(model_dir, "config.json")))
    return Vit(c, read_tensors(os.path.join(model_dir, "model.safetensors"))).eval(), c


def main(argv):
    if len(argv) == 6 and argv[1] == "torch":
        model_dir, batch, repeats, threads = argv[2], int(argv[3]), int(argv[4]), int(argv[5])
        torch.set_num_threads(threads)
        m, c = load(model_dir)
        x = torch.from_numpy(np.random.default_rng(1).standard_normal(
            (batch, 3, c["image_size"], c["image_size"]), dtype=np.float32))
        rates = []
        with torch.inference_mode():
            m(x)
            for _ in range(repeats):
                t0 = time.perf_counter()
                m(x)
                rates.append(batch / (time.perf_counter() - t0))
        print(json.dumps({"peer": "torch", "threads": threads, "images_per_s": rates}))
    elif len(argv) == 4 and argv[1] == "export":
        m, c = load(argv[2])
        x = torch.zeros(2, 3, c["image_size"], c["image_size"])
        torch.onnx.export(m, (x,), argv[3], input_names=["pixel_values"], output_names=["logits"],
                          dynamic_axes={"pixel_values": {0: "batch"}, "logits": {0: "batch"}}, opset_version=14)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
