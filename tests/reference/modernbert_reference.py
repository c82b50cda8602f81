"""Reference forward pass of a ModernBERT encoder, for Shoal's native runtime tests.

Used through bert_reference.py (same command line and files), which picks this
class for config.json's model_type "modernbert".

Written as plain float64 torch tensor operations from the architecture's
definition (the ModernBERT paper and transformers' ModernBertModel), on weights
read by our own safetensors reader, one sequence at a time:
  embeddings: tok_embeddings, then LayerNorm (no position table, no token types);
  each layer: h = x + Wo(attention(attn_norm(x))), x = h + Wo(GeGLU(Wi(mlp_norm(h))))
    with attn_norm the identity on layer 0; GeGLU(u|g) = gelu(u) * g (erf gelu);
    attention: rotary embeddings on q and k (rotate-half, theta by layer type),
    softmax(q k^T / sqrt(d)) v, on local layers with the scores of keys more than
    local_attention // 2 positions away set to -inf;
  final_norm; LayerNorms without bias unless norm_bias.
hidden_states' `attended` (as bert_reference.Encoder's, for PyLate's query expansion):
the keys at positions >= attended are set to -inf in every layer's scores, local
ones included, while their own rows are still computed; a row left with no key at
all (every key it may attend to in a local window is masked) raises ValueError,
where transformers' additive finfo.min mask would spread it evenly over every key.
Heads: ModernBertForSequenceClassification pools (CLS or mean, classifier_pooling),
then head.dense, classifier_activation, head.norm, classifier; ForTokenClassification
runs the same head and classifier on every token.
Config keys of transformers 4.48 (global_attn_every_n_layers, global/local_rope_theta)
and of transformers 5 (layer_types, rope_parameters) are both read.
"""
import json
import math
import os

import numpy as np
import torch

from bert_reference import ACTIVATIONS, DTYPE, pool, read_sentence_transformers
from safetensors_io import read_model_dir


class ModernBertEncoder:
    def __init__(self, model_dir, body_only=False):
        """body_only: as bert_reference.Encoder's (no sentence-transformers pooling read)."""
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = cfg = json.load(f)
        assert cfg["model_type"] == "modernbert"
        self.model_type = "modernbert"
        self.heads = cfg["num_attention_heads"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg.get("norm_eps", 1e-5)
        self.norm_bias = cfg.get("norm_bias", False)
        self.act = ACTIVATIONS[cfg.get("hidden_activation", "gelu")]
        self.head_act = ACTIVATIONS[cfg.get("classifier_activation", "gelu")]
        self.half_window = cfg.get("local_attention", 128) // 2
        if cfg.get("layer_types"):
            self.is_global = [t == "full_attention" for t in cfg["layer_types"]]
        else:
            every = cfg.get("global_attn_every_n_layers", 3)
            self.is_global = [n % every == 0 for n in range(self.layers)]
        rope = cfg.get("rope_parameters") or {}
        self.theta_global = rope.get("full_attention", {}).get("rope_theta", cfg.get("global_rope_theta", 160000.0))
        local = cfg.get("local_rope_theta")
        self.theta_local = rope.get("sliding_attention", {}).get(
            "rope_theta", local if local is not None else self.theta_global)
        arch = (cfg.get("architectures") or [""])[0]
        self.classifier = arch.endswith("ForSequenceClassification")
        self.token_classifier = arch.endswith("ForTokenClassification")
        self.classifier_pooling = cfg.get("classifier_pooling", "cls")

        raw = read_model_dir(model_dir, dtype=np.float64)
        self.w = {k: torch.from_numpy(v).to(DTYPE) for k, v in raw.items()}
        self.prefix = "" if "embeddings.tok_embeddings.weight" in self.w else "model."
        if not self.classifier and not self.token_classifier and not body_only:
            self.pooling, self.normalize = read_sentence_transformers(model_dir)

    def p(self, name):
        return self.w[self.prefix + name]

    def norm(self, x, name, prefixed=True):
        weight = self.p(name + ".weight") if prefixed else self.w[name + ".weight"]
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        y = (x - mean) / torch.sqrt(var + self.eps) * weight
        if self.norm_bias:
            y = y + (self.p(name + ".bias") if prefixed else self.w[name + ".bias"])
        return y

    def linear(self, x, name, prefixed=True):
        w = self.p(name + ".weight") if prefixed else self.w[name + ".weight"]
        bias_name = (self.prefix if prefixed else "") + name + ".bias"
        y = x @ w.T
        return y + self.w[bias_name] if bias_name in self.w else y

    def rotary(self, x, theta):
        """x: [heads, seq, dh]; rotate-half rotary embedding at positions 0..seq-1."""
        seq, dh = x.shape[1], x.shape[2]
        inv = theta ** (-torch.arange(0, dh, 2, dtype=DTYPE) / dh)        # [dh/2]
        angles = torch.arange(seq, dtype=DTYPE)[:, None] * inv[None, :]   # [seq, dh/2]
        cos = torch.cat([torch.cos(angles)] * 2, dim=-1)
        sin = torch.cat([torch.sin(angles)] * 2, dim=-1)
        rotated = torch.cat([-x[..., dh // 2:], x[..., :dh // 2]], dim=-1)
        return x * cos + rotated * sin

    def attention(self, x, L, is_global, attended=None):
        seq, hidden = x.shape
        dh = hidden // self.heads
        qkv = self.linear(x, L + "attn.Wqkv").reshape(seq, 3, self.heads, dh)
        q, k, v = (qkv[:, i].transpose(0, 1) for i in range(3))               # [heads, seq, dh]
        theta = self.theta_global if is_global else self.theta_local
        q, k = self.rotary(q, theta), self.rotary(k, theta)
        scores = q @ k.transpose(1, 2) / math.sqrt(dh)
        if not is_global:
            pos = torch.arange(seq)
            far = (pos[:, None] - pos[None, :]).abs() > self.half_window
            scores = scores.masked_fill(far, float("-inf"))
        if attended is not None:
            scores[:, :, attended:] = float("-inf")
            if not is_global and seq - attended > self.half_window:
                raise ValueError(f"row {seq - 1} attends to no key: keys from {attended} on are masked "
                                 f"and the local window reaches {self.half_window} positions back")
        probs = torch.softmax(scores, dim=-1)
        context = (probs @ v).transpose(0, 1).reshape(seq, hidden)
        return self.linear(context, L + "attn.Wo")

    def hidden_states(self, ids, type_ids=None, attended=None):
        """[seq, hidden] output of the final norm; attended: how many leading positions
        may be attended to as keys (None: all), as bert_reference.Encoder's."""
        x = self.norm(self.p("embeddings.tok_embeddings.weight")[torch.tensor(ids, dtype=torch.long)],
                      "embeddings.norm")
        for n in range(self.layers):
            L = f"layers.{n}."
            a = x if n == 0 else self.norm(x, L + "attn_norm")
            x = x + self.attention(a, L, self.is_global[n], attended)
            u, g = self.linear(self.norm(x, L + "mlp_norm"), L + "mlp.Wi").chunk(2, dim=-1)
            x = x + self.linear(self.act(u) * g, L + "mlp.Wo")
        return self.norm(x, "final_norm")

    def head(self, x):
        y = self.head_act(self.linear(x, "head.dense", prefixed=False))
        y = self.norm(y, "head.norm", prefixed=False)
        return self.linear(y, "classifier", prefixed=False)

    def run(self, ids, type_ids=None):
        h = self.hidden_states(ids)
        if self.token_classifier:
            return self.head(h).reshape(-1)
        if self.classifier:
            return self.head(h.mean(dim=0) if self.classifier_pooling == "mean" else h[0])
        return pool(h, self.pooling, self.normalize)
