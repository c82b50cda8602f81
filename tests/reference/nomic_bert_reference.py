"""Reference forward pass of a NomicBERT encoder (nomic-embed-text-v1.5), for Shoal's
native runtime tests.

Used through bert_reference.py (same command line and files), which picks this
class for config.json's model_type "nomic_bert".

Written as plain float64 torch tensor operations from the architecture's
definition (nomic's modeling_hf_nomic_bert.py, NomicBertModel), on weights read by
our own safetensors reader, one sequence at a time:
  embeddings: emb_ln(word_embeddings[ids] + token_type_embeddings[type_ids]) (no
    position table: rotary);
  each layer, post-norm: h = norm1(x + out_proj(attention(x))),
    x = norm2(h + fc2(fc11(h) * silu(fc12(h)))) (SwiGLU: fc12 is the gate);
    attention: Wqkv x split into q | k | v, each [heads, head_dim]; rotary embeddings
    on q and k, GPT-NeoX's rotate-half (non-interleaved) over the whole head,
    theta_i = rotary_emb_base^(-2i/head_dim), positions 0..T-1;
    softmax(q k^T / sqrt(head_dim)) v;
  LayerNorms with bias, eps layer_norm_epsilon; no biases on the linear layers.
Config keys are GPT-2's (n_embd, n_head, n_layer, n_inner, layer_norm_epsilon).
Configs this does not implement (prenorm, partial or interleaved rotary, a rotary
scale base, dynamic NTK scaling, an activation other than swiglu, linear biases,
parallel blocks, mixture-of-experts layers) exit with a message.
The pooler (dense + tanh on the first token) is not used by the embedding.
"""
import json
import math
import os
import sys

import numpy as np
import torch

from bert_reference import DTYPE, attend, layer_norm, pool, read_sentence_transformers
from safetensors_io import read_model_dir


def unsupported(cfg):
    """The config keys this reference does not implement, as messages."""
    out = []
    if cfg.get("prenorm", False):
        out.append("prenorm true")
    if float(cfg.get("rotary_emb_fraction", 0.0)) != 1.0:
        out.append(f"rotary_emb_fraction {cfg.get('rotary_emb_fraction', 0.0)} (only 1.0)")
    if cfg.get("rotary_emb_interleaved", False):
        out.append("interleaved rotary (rotary_emb_interleaved true)")
    if cfg.get("rotary_emb_scale_base") is not None:
        out.append(f"rotary_emb_scale_base {cfg['rotary_emb_scale_base']} (only null)")
    if cfg.get("rotary_scaling_factor") is not None:
        out.append(f"rotary_scaling_factor {cfg['rotary_scaling_factor']} (only null)")
    if cfg.get("activation_function") != "swiglu":
        out.append(f"activation_function {cfg.get('activation_function')!r} (only swiglu)")
    for key in ("qkv_proj_bias", "mlp_fc1_bias", "mlp_fc2_bias"):
        if cfg.get(key, True):  # NomicBertConfig's default is true
            out.append(f"{key} true")
    if cfg.get("parallel_block", False):
        out.append("parallel_block true")
    if cfg.get("use_rms_norm", False):
        out.append("use_rms_norm true")
    if cfg.get("causal", False):
        out.append("causal true")
    if cfg.get("moe_every_n_layers", 0):
        out.append("mixture-of-experts layers (moe_every_n_layers)")
    if cfg.get("norm_mlp", False):
        out.append("norm_mlp true")
    heads = cfg["n_head"]
    if cfg.get("num_heads_kv") not in (None, heads):
        out.append(f"num_heads_kv {cfg['num_heads_kv']} (only n_head)")
    if cfg["n_embd"] % heads or (cfg["n_embd"] // heads) % 2:
        out.append(f"n_embd {cfg['n_embd']} with n_head {heads}: head_dim must be an even integer")
    return out


class NomicBertEncoder:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = cfg = json.load(f)
        assert cfg["model_type"] == "nomic_bert"
        problems = unsupported(cfg)
        if problems:
            sys.exit(f"nomic_bert_reference: {model_dir}: not implemented: {'; '.join(problems)}")
        self.model_type = "nomic_bert"
        self.heads = cfg["n_head"]
        self.layers = cfg["n_layer"]
        self.eps = cfg.get("layer_norm_epsilon", 1e-12)
        self.base = float(cfg.get("rotary_emb_base", 10000))
        self.classifier = False
        self.token_classifier = False

        raw = read_model_dir(model_dir, dtype=np.float64)
        self.w = {k: torch.from_numpy(v).to(DTYPE) for k, v in raw.items()}
        if "embeddings.word_embeddings.weight" not in self.w:
            raise ValueError("no embeddings.word_embeddings.weight in the checkpoint "
                             "(only the bare NomicBertModel is handled)")
        self.pooling, self.normalize = read_sentence_transformers(model_dir)

    def norm(self, x, name):
        return layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def linear(self, x, name):
        """No biases: qkv_proj_bias, mlp_fc1_bias and mlp_fc2_bias are false."""
        return x @ self.w[name + ".weight"].T

    def rotary(self, x):
        """x: [heads, seq, dh]; rotate-half rotary embedding at positions 0..seq-1:
        x'[i] = x[i] cos(p t_i) - x[i+dh/2] sin(p t_i),
        x'[i+dh/2] = x[i+dh/2] cos(p t_i) + x[i] sin(p t_i), t_i = base^(-2i/dh)."""
        seq, dh = x.shape[1], x.shape[2]
        half = dh // 2
        inv = self.base ** (-torch.arange(0, dh, 2, dtype=DTYPE) / dh)     # [dh/2]
        angles = torch.arange(seq, dtype=DTYPE)[:, None] * inv[None, :]    # [seq, dh/2]
        cos, sin = torch.cos(angles), torch.sin(angles)
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    def attention(self, x, L):
        seq, hidden = x.shape
        dh = hidden // self.heads
        qkv = self.linear(x, L + "attn.Wqkv").reshape(seq, 3, self.heads, dh)
        q, k, v = (qkv[:, i].transpose(0, 1) for i in range(3))               # [heads, seq, dh]
        q, k = self.rotary(q), self.rotary(k)
        scores = q @ k.transpose(1, 2) / math.sqrt(dh)                         # [heads, seq, seq]
        context = attend(scores, v)
        return self.linear(context, L + "attn.out_proj")

    def mlp(self, h, L):
        value = self.linear(h, L + "mlp.fc11")
        gate = self.linear(h, L + "mlp.fc12")
        return self.linear(value * (gate * torch.sigmoid(gate)), L + "mlp.fc2")

    def hidden_states(self, ids, type_ids=None):
        """[seq, hidden] output of the last layer."""
        ids = torch.tensor(ids, dtype=torch.long)
        type_ids = torch.zeros_like(ids) if type_ids is None else torch.tensor(type_ids, dtype=torch.long)
        if len(ids) != len(type_ids):
            raise ValueError("ids and type_ids differ in length")
        x = self.w["embeddings.word_embeddings.weight"][ids]
        if "embeddings.token_type_embeddings.weight" in self.w:  # type_vocab_size > 0
            x = x + self.w["embeddings.token_type_embeddings.weight"][type_ids]
        x = self.norm(x, "emb_ln")
        for n in range(self.layers):
            L = f"encoder.layers.{n}."
            h = self.norm(x + self.attention(x, L), L + "norm1")
            x = self.norm(h + self.mlp(h, L), L + "norm2")
        return x

    def run(self, ids, type_ids=None):
        h = self.hidden_states(ids, type_ids)
        return pool(h, self.pooling, self.normalize)
