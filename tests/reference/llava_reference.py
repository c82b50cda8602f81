#!/usr/bin/python3
"""Reference vision-language generator (LlavaForConditionalGeneration) in float64
(Debian's torch and PIL), written from the architecture (transformers'
modeling_llava.py, modeling_clip.py and image_processing_clip.py as documented), not
from Shoal's code.

usage: llava_reference.py MODEL_DIR IN.json OUT.json

IN.json: {"ids": [token ids: the rendered prompt, one image token where each image
stands], "images": [PNG/JPEG paths, in order], "new_tokens": N}.
OUT.json: {"ids": the prompt with each image token widened to the image's rows,
"last_logits": [vocab floats] after the prompt, "greedy": [N ids],
"min_margin": the smallest top1 - top2 logit gap along the greedy path}.

The image: PIL's RGB, the shortest edge resized to size.shortest_edge (bicubic),
centre-cropped to crop_size (CLIPImageProcessor) or resized to size
(SiglipImageProcessor), times rescale_factor, normalized by image_mean /
image_std. The tower (CLIP's or SigLIP's): patches by a convolution of kernel and
stride patch_size (SigLIP's with a bias), CLIP's class token in front, positions
added, CLIP's pre_layrnorm, then per layer x += attn(LN1(x));
x += fc2(act(fc1(LN2(x)))) with quick_gelu (CLIP) or GELU's tanh form (SigLIP);
hidden_states[k] is the input of layer k (hidden_states[-1] the last layer's
output). The image's rows: hidden_states[vision_feature_layer], without the class
token when the strategy is "default", through linear_2(gelu(linear_1(.))). The prompt's embeddings:
embed_tokens of each id, the image token's positions replaced by the image's rows
in order. The decoder (Llama / Qwen2): RMSNorm, q/k/v (Qwen2's biases), RoPE in
the rotate-half layout with inv_freq = 1 / theta^(2i/d), grouped-query causal
attention, SwiGLU, the final norm and lm_head; greedy decoding recomputes the whole
sequence every step (no cache).
"""
import json
import os
import sys

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_tensors  # noqa: E402


def pixels(path, pre):
    img = Image.open(path).convert("RGB")
    if "shortest_edge" in pre["size"]:  # CLIPImageProcessor: the short side resized, then a centre crop
        edge = pre["size"]["shortest_edge"]
        w, h = img.size
        scale = edge / min(w, h)
        # transformers' get_resize_output_image_size: the short side exact, the long one int()
        size = (edge, int(h * scale)) if w <= h else (int(w * scale), edge)
        img = img.resize(size, Image.BICUBIC)
        ch, cw = pre["crop_size"]["height"], pre["crop_size"]["width"]
    else:  # SiglipImageProcessor: resized to the size, no crop
        ch, cw = pre["size"]["height"], pre["size"]["width"]
        img = img.resize((cw, ch), Image.BICUBIC)
    top, left = (img.size[1] - ch) // 2, (img.size[0] - cw) // 2
    x = np.asarray(img, dtype=np.float64)[top:top + ch, left:left + cw] * pre["rescale_factor"]
    x = (x - np.array(pre["image_mean"])) / np.array(pre["image_std"])
    return torch.from_numpy(x.transpose(2, 0, 1).copy())


def image_rows(w, config, px):
    c = config["vision_config"]
    siglip = c["model_type"] == "siglip_vision_model"
    h, heads, p, eps = c["hidden_size"], c["num_attention_heads"], c["patch_size"], c["layer_norm_eps"]
    b = "vision_tower.vision_model."
    ln = lambda x, n: torch.nn.functional.layer_norm(x, (h,), w[n + ".weight"], w[n + ".bias"], eps)
    lin = lambda x, n: x @ w[n + ".weight"].T + w[n + ".bias"]
    act = (lambda f: torch.nn.functional.gelu(f, approximate="tanh")) if siglip else \
        (lambda f: f * torch.sigmoid(1.702 * f))
    x = torch.nn.functional.conv2d(px[None], w[b + "embeddings.patch_embedding.weight"],
                                   w.get(b + "embeddings.patch_embedding.bias"), stride=p)
    x = x.flatten(2).transpose(1, 2)[0]
    if not siglip:  # CLIP: a class token in front, and pre_layrnorm
        x = torch.cat([w[b + "embeddings.class_embedding"][None], x])
    x = x + w[b + "embeddings.position_embedding.weight"]
    if not siglip:
        x = ln(x, b + "pre_layrnorm")
    states, d = [x], h // heads
    for i in range(c["num_hidden_layers"]):
        l = f"{b}encoder.layers.{i}."
        y = ln(x, l + "layer_norm1")
        q, k, v = (lin(y, l + "self_attn." + n).reshape(-1, heads, d).transpose(0, 1) for n in ("q_proj", "k_proj",
                                                                                                "v_proj"))
        a = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5, dim=-1) @ v
        x = x + lin(a.transpose(0, 1).reshape(-1, h), l + "self_attn.out_proj")
        x = x + lin(act(lin(ln(x, l + "layer_norm2"), l + "mlp.fc1")), l + "mlp.fc2")
        states.append(x)
    s = states[config.get("vision_feature_layer", -2)]
    if config.get("vision_feature_select_strategy", "default") == "default":
        s = s[1:]
    g = torch.nn.functional.gelu(lin(s, "multi_modal_projector.linear_1"))
    return lin(g, "multi_modal_projector.linear_2")


def decoder_logits(w, t, embeds):
    h, heads, kv = t["hidden_size"], t["num_attention_heads"], t["num_key_value_heads"]
    d = t.get("head_dim") or h // heads
    eps, n = t["rms_norm_eps"], embeds.shape[0]
    p = "language_model.model."
    rms = lambda x, name: x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w[name]
    lin = lambda x, name: x @ w[name + ".weight"].T + (w[name + ".bias"] if name + ".bias" in w else 0)
    inv = 1.0 / (t["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None]
    cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
    rot = lambda x: x * cos + torch.cat([-x[..., d // 2:], x[..., :d // 2]], -1) * sin
    mask = torch.full((n, n), float("-inf"), dtype=torch.float64).triu(1)
    x = embeds
    for i in range(t["num_hidden_layers"]):
        l = f"{p}layers.{i}."
        y = rms(x, l + "input_layernorm.weight")
        q = rot(lin(y, l + "self_attn.q_proj").reshape(n, heads, d).transpose(0, 1))
        k = rot(lin(y, l + "self_attn.k_proj").reshape(n, kv, d).transpose(0, 1))
        v = lin(y, l + "self_attn.v_proj").reshape(n, kv, d).transpose(0, 1)
        k, v = k.repeat_interleave(heads // kv, 0), v.repeat_interleave(heads // kv, 0)
        a = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5 + mask, dim=-1) @ v
        x = x + lin(a.transpose(0, 1).reshape(n, heads * d), l + "self_attn.o_proj")
        y = rms(x, l + "post_attention_layernorm.weight")
        gate, up = lin(y, l + "mlp.gate_proj"), lin(y, l + "mlp.up_proj")
        x = x + lin(gate * torch.sigmoid(gate) * up, l + "mlp.down_proj")
    return lin(rms(x, p + "norm.weight"), "language_model.lm_head")


def main(model_dir, in_path, out_path):
    config = json.load(open(os.path.join(model_dir, "config.json")))
    pre = json.load(open(os.path.join(model_dir, "preprocessor_config.json")))
    w = {k: torch.from_numpy(v) for k, v in read_tensors(os.path.join(model_dir, "model.safetensors"),
                                                          dtype=np.float64).items()}
    req = json.load(open(in_path))
    token = config["image_token_index"]
    rows = [image_rows(w, config, pixels(p, pre)) for p in req["images"]]
    ids, placed = [], []
    for i in req["ids"]:
        if i == token:
            placed.append((len(ids), rows[len(placed)]))
            ids += [token] * rows[0].shape[0]
        else:
            ids.append(i)
    assert len(placed) == len(rows), "one image token per image"
    embed = w["language_model.model.embed_tokens.weight"]
    prompt = embed[torch.tensor(ids)].clone()
    for at, r in placed:
        prompt[at:at + r.shape[0]] = r
    out, margin, greedy = None, float("inf"), []
    x = prompt
    for step in range(req["new_tokens"]):
        logits = decoder_logits(w, config["text_config"], x)[-1]
        if step == 0:
            out = logits
        top = torch.topk(logits, 2).values
        margin = min(margin, float(top[0] - top[1]))
        nxt = int(torch.argmax(logits))
        greedy.append(nxt)
        x = torch.cat([x, embed[nxt][None]])
    json.dump({"ids": ids, "last_logits": out.tolist(), "greedy": greedy, "min_margin": margin},
              open(out_path, "w"))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
