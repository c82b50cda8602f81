"""ModernBERT as a standard PyTorch eager module: the benchmark peers' model.

What transformers' ModernBertModel computes on its eager path, in the torch
1.13 Debian ships: nn.Embedding / nn.Linear / nn.LayerNorm (bias-free norms
get a zero bias: torch 1.13's LayerNorm always has one), rotary embeddings on
queries and keys, attention as per-head matmul, scale, an additive mask
(padding, and on local layers the keys more than local_attention // 2 away),
softmax, matmul; the GeGLU feed-forward; the final norm. forward(input_ids,
attention_mask, token_type_ids) returns the pooled (and normalized, when the
model says so) embedding, as encoder_module.Encoder does; token types are
ignored (ModernBERT has none). Embedders only (ModernBertModel).
"""
import json
import math
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read_model_dir  # noqa: E402
from bert_reference import read_sentence_transformers  # noqa: E402
from encoder_module import pool  # noqa: E402  (it imports this module only when asked for one)

ACT = {"gelu": nn.GELU(), "gelu_new": nn.GELU(approximate="tanh"),
       "gelu_pytorch_tanh": nn.GELU(approximate="tanh"), "relu": nn.ReLU()}


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


class Layer(nn.Module):
    def __init__(self, cfg, first, is_global, theta):
        super().__init__()
        h, i, eps = cfg["hidden_size"], cfg["intermediate_size"], cfg.get("norm_eps", 1e-5)
        self.heads = cfg["num_attention_heads"]
        self.dh = h // self.heads
        self.is_global = is_global
        self.attn_norm = nn.Identity() if first else nn.LayerNorm(h, eps=eps)
        self.Wqkv, self.attn_Wo = nn.Linear(h, 3 * h, bias=False), nn.Linear(h, h, bias=False)
        self.mlp_norm = nn.LayerNorm(h, eps=eps)
        self.Wi, self.mlp_Wo = nn.Linear(h, 2 * i, bias=False), nn.Linear(i, h, bias=False)
        self.act = ACT[cfg.get("hidden_activation", "gelu")]
        self.register_buffer("inv_freq", theta ** (-torch.arange(0, self.dh, 2, dtype=torch.float32) / self.dh),
                             persistent=False)

    def forward(self, x, padding_mask, far):
        b, s, _ = x.shape
        qkv = self.Wqkv(self.attn_norm(x)).view(b, s, 3, self.heads, self.dh)
        q, k, v = (qkv[:, :, n].transpose(1, 2) for n in range(3))  # [b, heads, s, dh]
        angles = torch.arange(s, dtype=torch.float32, device=x.device)[:, None] * self.inv_freq[None, :]
        emb = torch.cat([angles, angles], dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)  # computed in float32, as transformers does
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh) + padding_mask
        if not self.is_global:  # set, not added: a sum of two minima would be -inf
            scores = scores.masked_fill(far, torch.finfo(scores.dtype).min)
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, -1)
        x = x + self.attn_Wo(ctx)
        u, g = self.Wi(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.mlp_Wo(self.act(u) * g)


class ModernBertEncoder(nn.Module):
    def __init__(self, model_dir, hidden_states=False):
        super().__init__()
        self.hidden_states = hidden_states
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        self.cfg = cfg
        if not cfg["architectures"][0].endswith("Model"):
            raise ValueError("the ModernBERT peer runs embedders (ModernBertModel) only")
        self.classifier = False
        h, eps = cfg["hidden_size"], cfg.get("norm_eps", 1e-5)
        self.pad = cfg["pad_token_id"]
        self.half_window = cfg.get("local_attention", 128) // 2
        if cfg.get("layer_types"):
            is_global = [t == "full_attention" for t in cfg["layer_types"]]
        else:
            every = cfg.get("global_attn_every_n_layers", 3)
            is_global = [n % every == 0 for n in range(cfg["num_hidden_layers"])]
        rope = cfg.get("rope_parameters") or {}
        theta_global = rope.get("full_attention", {}).get("rope_theta", cfg.get("global_rope_theta", 160000.0))
        theta_local = rope.get("sliding_attention", {}).get("rope_theta", cfg.get("local_rope_theta") or theta_global)
        self.tok_embeddings = nn.Embedding(cfg["vocab_size"], h)
        self.emb_norm = nn.LayerNorm(h, eps=eps)
        self.layers = nn.ModuleList(Layer(cfg, n == 0, g, theta_global if g else theta_local)
                                    for n, g in enumerate(is_global))
        self.final_norm = nn.LayerNorm(h, eps=eps)
        self.pooling, self.normalize = read_sentence_transformers(model_dir)
        self._load(model_dir)

    def _load(self, model_dir):
        w = {k: torch.from_numpy(v) for k, v in read_model_dir(model_dir).items()}
        prefix = "" if "embeddings.tok_embeddings.weight" in w else "model."
        state = {"tok_embeddings.weight": w[prefix + "embeddings.tok_embeddings.weight"],
                 "emb_norm.weight": w[prefix + "embeddings.norm.weight"],
                 "final_norm.weight": w[prefix + "final_norm.weight"]}
        for n in range(len(self.layers)):
            L = f"{prefix}layers.{n}."
            names = {"Wqkv": "attn.Wqkv", "attn_Wo": "attn.Wo", "mlp_norm": "mlp_norm", "Wi": "mlp.Wi",
                     "mlp_Wo": "mlp.Wo"}
            if n > 0:
                names["attn_norm"] = "attn_norm"
            for mine, theirs in names.items():
                state[f"layers.{n}.{mine}.weight"] = w[L + theirs + ".weight"]
        # Bias-free norms: zero biases (or the checkpoint's, with norm_bias).
        for name, module in self.named_modules():
            if isinstance(module, nn.LayerNorm):
                theirs = {"emb_norm": "embeddings.norm", "final_norm": "final_norm"}.get(name)
                if theirs is None:  # layers.N.attn_norm / mlp_norm
                    theirs = name
                state[name + ".bias"] = w.get(prefix + theirs + ".bias", torch.zeros_like(module.bias))
        self.load_state_dict(state)

    def forward(self, input_ids, attention_mask, token_type_ids):
        s = input_ids.shape[1]
        x = self.emb_norm(self.tok_embeddings(input_ids))
        mask = attention_mask.to(x.dtype)
        low = torch.finfo(x.dtype).min
        padding = (1.0 - mask)[:, None, None, :] * low
        pos = torch.arange(s, device=input_ids.device)
        far = ((pos[:, None] - pos[None, :]).abs() > self.half_window)[None, None]
        for layer in self.layers:
            x = layer(x, padding, far)
        x = self.final_norm(x)
        if self.hidden_states:
            return x
        return pool(x, mask, self.pooling, self.normalize)
