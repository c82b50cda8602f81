"""The encoder as a standard PyTorch eager module: the benchmark peers' model.

nn.Embedding / nn.Linear / nn.LayerNorm, and attention as transformers' eager
BertSelfAttention computes it: per-head matmul, scale, an additive padding
mask (0 where attended, the dtype's minimum where padded), softmax, matmul.
forward(input_ids, attention_mask, token_type_ids) returns what Shoal serves:
the pooled (and normalized, when the model says so) embedding, or the
classifier's logits — or, with hidden_states=True, an embedder's last hidden
state [batch, tokens, hidden], as a Hugging Face export gives it (for the
sidecar runtimes, which pool). Weights come from the model directory's
safetensors via safetensors_io.py.

Used by the encoder benchmark's peers (bench/encoders) and by
scripts/make-test-exports.
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

ACT = {"gelu": nn.GELU(), "gelu_new": nn.GELU(approximate="tanh"),
       "gelu_pytorch_tanh": nn.GELU(approximate="tanh"), "relu": nn.ReLU()}


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, i = cfg["hidden_size"], cfg["intermediate_size"]
        eps = cfg["layer_norm_eps"]
        self.heads = cfg["num_attention_heads"]
        self.dh = h // self.heads  # from the config, so tracing keeps shapes symbolic
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.attn_out, self.attn_norm = nn.Linear(h, h), nn.LayerNorm(h, eps=eps)
        self.inter, self.act = nn.Linear(h, i), ACT[cfg["hidden_act"]]
        self.out, self.out_norm = nn.Linear(i, h), nn.LayerNorm(h, eps=eps)

    def forward(self, x, additive_mask):
        b = x.shape[0]

        def split(t):  # [b, s, h] -> [b, heads, s, dh]
            return t.view(b, -1, self.heads, self.dh).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh) + additive_mask
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2)
        ctx = ctx.reshape(b, -1, self.heads * self.dh)
        x = self.attn_norm(self.attn_out(ctx) + x)
        return self.out_norm(self.out(self.act(self.inter(x))) + x)


class Encoder(nn.Module):
    def __init__(self, model_dir, hidden_states=False):
        super().__init__()
        self.hidden_states = hidden_states
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        self.cfg = cfg
        h = cfg["hidden_size"]
        self.roberta = cfg["model_type"] == "roberta"
        self.pad = cfg["pad_token_id"]
        self.word = nn.Embedding(cfg["vocab_size"], h)
        self.position = nn.Embedding(cfg["max_position_embeddings"], h)
        self.token_type = nn.Embedding(cfg["type_vocab_size"], h)
        self.emb_norm = nn.LayerNorm(h, eps=cfg["layer_norm_eps"])
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg["num_hidden_layers"]))
        self.classifier = cfg["architectures"][0].endswith("ForSequenceClassification")
        if self.classifier:
            labels = len(cfg.get("id2label", {"0": ""}))
            self.head_dense, self.head_out = nn.Linear(h, h), nn.Linear(h, labels)
        else:
            self.pooling, self.normalize = read_sentence_transformers(model_dir)
        self._load(model_dir)

    def _load(self, model_dir):
        w = {k: torch.from_numpy(v) for k, v in read_model_dir(model_dir).items()}
        prefix = "" if "embeddings.word_embeddings.weight" in w else self.cfg["model_type"] + "."
        names = {"word.weight": "embeddings.word_embeddings.weight",
                 "position.weight": "embeddings.position_embeddings.weight",
                 "token_type.weight": "embeddings.token_type_embeddings.weight",
                 "emb_norm.weight": "embeddings.LayerNorm.weight",
                 "emb_norm.bias": "embeddings.LayerNorm.bias"}
        ours = {"query": "attention.self.query", "key": "attention.self.key",
                "value": "attention.self.value", "attn_out": "attention.output.dense",
                "attn_norm": "attention.output.LayerNorm", "inter": "intermediate.dense",
                "out": "output.dense", "out_norm": "output.LayerNorm"}
        for n in range(len(self.layers)):
            for mine, theirs in ours.items():
                for p in ("weight", "bias"):
                    names[f"layers.{n}.{mine}.{p}"] = f"encoder.layer.{n}.{theirs}.{p}"
        state = {mine: w[prefix + theirs] for mine, theirs in names.items()}
        if self.classifier:
            if self.roberta:
                head = {"head_dense": "classifier.dense", "head_out": "classifier.out_proj"}
            else:
                head = {"head_dense": prefix + "pooler.dense", "head_out": "classifier"}
            for mine, theirs in head.items():
                for p in ("weight", "bias"):
                    state[f"{mine}.{p}"] = w[f"{theirs}.{p}"]
        self.load_state_dict(state)

    def forward(self, input_ids, attention_mask, token_type_ids):
        b, s = input_ids.shape
        if self.roberta:  # ids of real tokens count up from pad+1; padding gets pad
            not_pad = (input_ids != self.pad).long()
            positions = torch.cumsum(not_pad, dim=1) * not_pad + self.pad
        else:
            positions = torch.arange(s, device=input_ids.device).unsqueeze(0).expand(b, s)
        x = self.emb_norm(self.word(input_ids) + self.position(positions)
                          + self.token_type(token_type_ids))
        mask = attention_mask.to(x.dtype)
        additive = (1.0 - mask)[:, None, None, :] * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, additive)
        if self.classifier:
            return self.head_out(torch.tanh(self.head_dense(x[:, 0])))
        if self.hidden_states:
            return x
        return pool(x, mask, self.pooling, self.normalize)


def pool(x, mask, pooling, normalize):
    """One vector per sequence from hidden states x [b, s, h] and the padding mask
    (as x's dtype): CLS or the masked mean, unit length when `normalize`."""
    if pooling == "cls":
        v = x[:, 0]
    elif pooling == "mean":
        m = mask.unsqueeze(-1)
        v = (x * m).sum(dim=1) / torch.clamp(m.sum(dim=1), min=1e-9)
    else:
        raise ValueError(f"pooling {pooling} not in the benchmark peer")
    return nn.functional.normalize(v, p=2.0, dim=-1) if normalize else v


def load_module(model_dir, hidden_states=False):
    """The peer module for the directory's architecture: ModernBERT's
    (modernbert_module.py) or the BERT family's Encoder."""
    with open(os.path.join(model_dir, "config.json")) as f:
        if json.load(f).get("model_type") == "modernbert":
            from modernbert_module import ModernBertEncoder
            return ModernBertEncoder(model_dir, hidden_states=hidden_states)
    return Encoder(model_dir, hidden_states=hidden_states)
