#!/usr/bin/python3
"""Reference forward pass of a BERT-family encoder, for Shoal's native runtime tests.

usage: bert_reference.py MODEL_DIR IN.json OUT.json [--lora ADAPTER_DIR]

IN.json:  {"inputs": [{"ids": [...], "type_ids": [...], "lora": "ADAPTER_DIR"}, ...]}
  (token ids, no tokenizer; type_ids and lora optional)
OUT.json: {"outputs": [[floats...], ...]}
  embedding models: the pooled vector, L2-normalized when modules.json has a
  Normalize module; sequence classifiers: the num_labels logits; token
  classifiers: the num_labels logits of every token, token after token.

LoRA: a PEFT LoRA adapter directory (adapter_config.json, adapter_model.safetensors)
is merged into the weights before the forward pass (peft_lora.py: W + scaling * B @ A
in float64; modules_to_save tensors replace the base's). --lora applies to every
input; an input's own "lora" wins over it ("lora": null or "" runs the base model),
so one IN.json can mix adapters. Each adapter is merged once. An adapter that
cannot be merged exactly (see peft_lora.py) exits 1 with a message.

Written as plain float64 torch tensor operations (no nn modules, no fused
attention) from the architecture's definition, on weights read by our own
safetensors reader: an independent check of the native engine, not a copy of
its structure. Each input runs alone, so there is no padding and no mask.

ModernBERT directories (model_type modernbert) run modernbert_reference.py's
ModernBertEncoder instead, NomicBERT ones (model_type nomic_bert, nomic-embed-text)
nomic_bert_reference.py's NomicBertEncoder, DeBERTa-v2 / v3 ones (model_type
deberta-v2) deberta_v2_reference.py's DebertaV2Encoder, JinaBERT ones (model_type
bert with position_embedding_type alibi: jina-embeddings-v2, jina-reranker-v1)
jina_bert_reference.py's JinaBertEncoder, DistilBERT ones (model_type distilbert)
distilbert_reference.py's DistilBertEncoder, MPNet ones (model_type mpnet:
all-mpnet-base-v2, multi-qa-mpnet-base-*, MPNet cross-encoders) mpnet_reference.py's
MPNetEncoder, ELECTRA ones (model_type electra: cross-encoder/ms-marco-electra-base,
ELECTRA discriminators fine-tuned as classifiers and NER models, ELECTRA embedders)
electra_reference.py's ElectraEncoder; the rest of this docstring is the BERT family's.

Handles BertModel / RobertaModel / XLMRobertaModel (sentence-transformers layout: no prefix),
BertForSequenceClassification (bert. prefix, pooler dense+tanh on [CLS], then
classifier) and (XLM)RobertaForSequenceClassification (roberta. prefix, classifier
.dense+tanh on <s>, then classifier.out_proj), *ForTokenClassification (a
classifier linear layer on every token); absolute position embeddings,
RoBERTa's position ids starting at pad_token_id + 1, token type embeddings,
hidden_act gelu (erf), gelu_new / gelu_pytorch_tanh (tanh), relu.
"""
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peft_lora import AdapterError, Adapters  # noqa: E402
from safetensors_io import read_model_dir  # noqa: E402

DTYPE = torch.float64


def gelu_erf(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


ACTIVATIONS = {"gelu": gelu_erf, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh,
               "relu": lambda x: torch.clamp(x, min=0.0)}


def layer_norm(x, weight, bias, eps):
    """Over the last axis, biased variance (as torch.nn.LayerNorm)."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def linear(x, w, b):
    """y = x W^T + b with W stored [out, in] as in the checkpoint."""
    return x @ w.T + b


def attend(scores, v):
    """Softmax over the keys (max-subtracted) of scores [heads, seq, keys], then the
    values v [heads, keys, dh]: the context [seq, heads * dh]."""
    scores = scores - scores.max(dim=-1, keepdim=True).values
    probs = torch.exp(scores)
    probs = probs / probs.sum(dim=-1, keepdim=True)
    heads, _, dh = v.shape
    return (probs @ v).transpose(0, 1).reshape(scores.shape[1], heads * dh)


def pool(h, pooling, normalize):
    """sentence-transformers' Pooling of h [seq, hidden] (cls, mean, max or lasttoken),
    then its Normalize module when the model has one."""
    v = {"cls": lambda: h[0], "mean": lambda: h.mean(dim=0), "max": lambda: h.max(dim=0).values,
         "lasttoken": lambda: h[-1]}[pooling]()
    if normalize:
        v = v / torch.clamp(torch.sqrt((v * v).sum()), min=1e-12)
    return v


class Checkpoint:
    """A model directory's tensors in float64 (w) and the prefix its body is under
    (prefix: "" in a bare model's checkpoint, e.g. "distilbert." in a *For* head's),
    with the accessors the encoder references share; norm() uses the subclass's eps."""

    def read_config(self, model_dir, model_type, program, unsupported):
        """config.json into self.cfg (returned), or exit naming what unsupported(cfg)
        lists; self.classifier / token_classifier from its architecture."""
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = cfg = json.load(f)
        problems = unsupported(cfg)
        if problems:
            sys.exit(f"{program}: {model_dir}: not implemented: {'; '.join(problems)}")
        self.model_type = model_type
        arch = (cfg.get("architectures") or [""])[0]
        self.classifier = arch.endswith("ForSequenceClassification")
        self.token_classifier = arch.endswith("ForTokenClassification")
        return cfg

    def load_weights(self, model_dir, head_prefix, body_only=False):
        """The tensors, and an embedder's sentence-transformers pooling unless
        body_only (callers that apply a head of their own)."""
        raw = read_model_dir(model_dir, dtype=np.float64)
        self.w = {k: torch.from_numpy(v).to(DTYPE) for k, v in raw.items()}
        self.prefix = "" if "embeddings.word_embeddings.weight" in self.w else head_prefix
        if self.prefix + "embeddings.word_embeddings.weight" not in self.w:
            raise ValueError("no embeddings.word_embeddings.weight in the checkpoint")
        if not self.classifier and not self.token_classifier and not body_only:
            self.pooling, self.normalize = read_sentence_transformers(model_dir)

    def p(self, name):
        return self.w[self.prefix + name]

    def dense(self, x, name, prefixed=True):
        get = self.p if prefixed else self.w.__getitem__
        return linear(x, get(name + ".weight"), get(name + ".bias"))

    def norm(self, x, name):
        return layer_norm(x, self.p(name + ".weight"), self.p(name + ".bias"), self.eps)

    def self_attention(self, x, names, attended=None, bias=None):
        """Multi-head self-attention of x [seq, hidden] through the query, key, value
        and output projections `names` (under the prefix), over self.heads heads of
        self.head_dim: bias [heads, seq, seq] (or None) added to the scaled scores,
        keys from `attended` on (None: none) masked out of every query's softmax."""
        seq = x.shape[0]

        def heads(name):  # [seq, hidden] -> [heads, seq, head_dim]
            return self.dense(x, name).reshape(seq, self.heads, self.head_dim).transpose(0, 1)

        q, k, v = heads(names[0]), heads(names[1]), heads(names[2])
        scores = q @ k.transpose(1, 2) / math.sqrt(self.head_dim)          # [heads, seq, seq]
        if bias is not None:
            scores = scores + bias
        if attended is not None:
            scores[:, :, attended:] = float("-inf")
        return self.dense(attend(scores, v), names[3])

    def run(self, ids, type_ids=None):
        """What Shoal serves for one input: a token classifier's logits per token
        (flattened), a sequence classifier's (the subclass's classify), or the pooled
        embedding; hidden_states is the subclass's."""
        h = self.hidden_states(ids, type_ids)
        if self.token_classifier:
            return self.dense(h, "classifier", prefixed=False).reshape(-1)
        if self.classifier:
            return self.classify(h[0])
        return pool(h, self.pooling, self.normalize)


class Encoder(Checkpoint):
    def __init__(self, model_dir, body_only=False):
        """body_only: read just the body (for hidden_states), not the sentence-transformers
        pooling an embedder's run() needs: for callers that apply a head of their own
        (sparse_multivector_reference.py)."""
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = cfg = json.load(f)
        if cfg.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are supported")
        self.model_type = cfg["model_type"]
        # XLM-RoBERTa is RoBERTa's architecture (transformers' modeling file is a copy).
        if self.model_type not in ("bert", "roberta", "xlm-roberta"):
            raise ValueError(f"model_type {self.model_type!r} not handled")
        self.act = ACTIVATIONS[cfg["hidden_act"]]
        self.eps = cfg["layer_norm_eps"]
        self.heads = cfg["num_attention_heads"]
        arch = (cfg.get("architectures") or [""])[0]
        self.classifier = arch.endswith("ForSequenceClassification")
        self.token_classifier = arch.endswith("ForTokenClassification")

        # Classifier checkpoints put the body under "bert." / "roberta.".
        self.load_weights(model_dir, "bert." if self.model_type == "bert" else "roberta.", body_only=body_only)

    def position_ids(self, ids):
        if self.model_type == "bert":
            return torch.arange(len(ids))
        # RoBERTa: non-pad tokens are numbered pad+1, pad+2, ...; pad tokens get pad.
        pad = self.cfg["pad_token_id"]
        not_pad = (ids != pad).long()
        return torch.cumsum(not_pad, dim=0) * not_pad + pad

    def hidden_states(self, ids, type_ids, attended=None):
        """[seq, hidden] output of the last layer. attended: how many leading
        positions may be attended to as keys (None: all); the later ones are
        masked out of every query's softmax, as an attention mask of zeros at
        their positions does, while their own rows are still computed."""
        ids = torch.tensor(ids, dtype=torch.long)
        type_ids = torch.tensor(type_ids, dtype=torch.long)
        if len(ids) != len(type_ids):
            raise ValueError("ids and type_ids differ in length")
        x = (self.p("embeddings.word_embeddings.weight")[ids]
             + self.p("embeddings.position_embeddings.weight")[self.position_ids(ids)]
             + self.p("embeddings.token_type_embeddings.weight")[type_ids])
        x = layer_norm(x, self.p("embeddings.LayerNorm.weight"),
                       self.p("embeddings.LayerNorm.bias"), self.eps)
        for n in range(self.cfg["num_hidden_layers"]):
            x = self.layer(x, f"encoder.layer.{n}.", attended)
        return x

    def layer(self, x, L, attended=None):
        seq, hidden = x.shape
        dh = hidden // self.heads

        def proj(name):  # [seq, hidden] -> [heads, seq, dh]
            y = linear(x, self.p(L + name + ".weight"), self.p(L + name + ".bias"))
            return y.reshape(seq, self.heads, dh).transpose(0, 1)

        q = proj("attention.self.query")
        k = proj("attention.self.key")
        v = proj("attention.self.value")
        scores = q @ k.transpose(1, 2) / math.sqrt(dh)          # [heads, seq, seq]
        if attended is not None:
            scores[:, :, attended:] = float("-inf")
        context = attend(scores, v)
        attn = linear(context, self.p(L + "attention.output.dense.weight"),
                      self.p(L + "attention.output.dense.bias"))
        x = layer_norm(attn + x, self.p(L + "attention.output.LayerNorm.weight"),
                       self.p(L + "attention.output.LayerNorm.bias"), self.eps)
        inner = self.act(linear(x, self.p(L + "intermediate.dense.weight"),
                                self.p(L + "intermediate.dense.bias")))
        out = linear(inner, self.p(L + "output.dense.weight"), self.p(L + "output.dense.bias"))
        return layer_norm(out + x, self.p(L + "output.LayerNorm.weight"),
                          self.p(L + "output.LayerNorm.bias"), self.eps)

    def run(self, ids, type_ids):
        h = self.hidden_states(ids, type_ids)
        if self.token_classifier:
            return linear(h, self.w["classifier.weight"], self.w["classifier.bias"]).reshape(-1)
        if self.classifier:
            first = h[0]
            if self.model_type == "bert":
                pooled = torch.tanh(linear(first, self.p("pooler.dense.weight"),
                                           self.p("pooler.dense.bias")))
                return linear(pooled, self.w["classifier.weight"], self.w["classifier.bias"])
            dense = torch.tanh(linear(first, self.w["classifier.dense.weight"],
                                      self.w["classifier.dense.bias"]))
            return linear(dense, self.w["classifier.out_proj.weight"],
                          self.w["classifier.out_proj.bias"])
        return pool(h, self.pooling, self.normalize)


def load_encoder(model_dir, body_only=False):
    """The reference for the directory's architecture: ModernBERT's (modernbert_reference.py),
    NomicBERT's (nomic_bert_reference.py), DeBERTa-v2's (deberta_v2_reference.py, which
    also refuses DeBERTa v1's "deberta"), JinaBERT's (jina_bert_reference.py: BERT with
    ALiBi), DistilBERT's (distilbert_reference.py), MPNet's (mpnet_reference.py), ELECTRA's
    (electra_reference.py) or the BERT family's. body_only (Encoder's): the BERT family's,
    ModernBERT's, DistilBERT's, MPNet's and ELECTRA's only; the others raise ValueError."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    model_type = cfg.get("model_type")
    if model_type == "modernbert":
        from modernbert_reference import ModernBertEncoder
        return ModernBertEncoder(model_dir, body_only=body_only)
    if model_type == "distilbert":
        from distilbert_reference import DistilBertEncoder
        return DistilBertEncoder(model_dir, body_only=body_only)
    if model_type == "mpnet":
        from mpnet_reference import MPNetEncoder
        return MPNetEncoder(model_dir, body_only=body_only)
    if model_type == "electra":
        from electra_reference import ElectraEncoder
        return ElectraEncoder(model_dir, body_only=body_only)
    if body_only and (model_type in ("nomic_bert", "deberta-v2", "deberta")
                      or (model_type == "bert" and cfg.get("position_embedding_type") == "alibi")):
        raise ValueError(f"{model_type} ({cfg.get('position_embedding_type', 'absolute')} positions): "
                         "no body-only reference")
    if model_type == "nomic_bert":
        from nomic_bert_reference import NomicBertEncoder
        return NomicBertEncoder(model_dir)
    if model_type in ("deberta-v2", "deberta"):
        from deberta_v2_reference import DebertaV2Encoder
        return DebertaV2Encoder(model_dir)
    if model_type == "bert" and cfg.get("position_embedding_type") == "alibi":
        from jina_bert_reference import JinaBertEncoder
        return JinaBertEncoder(model_dir)
    return Encoder(model_dir, body_only=body_only)


def read_sentence_transformers(model_dir):
    """(pooling mode, normalize) from modules.json and 1_Pooling/config.json."""
    with open(os.path.join(model_dir, "modules.json")) as f:
        modules = json.load(f)
    pooling_dir = None
    normalize = False
    for m in modules:
        kind = m["type"].rsplit(".", 1)[-1]
        if kind == "Pooling":
            pooling_dir = m["path"]
        elif kind == "Normalize":
            normalize = True
        elif kind != "Transformer":
            raise ValueError(f"modules.json: module {m['type']} not handled")
    if pooling_dir is None:
        raise ValueError("modules.json has no Pooling module")
    with open(os.path.join(model_dir, pooling_dir, "config.json")) as f:
        pc = json.load(f)
    modes = [mode for key, mode in (("pooling_mode_cls_token", "cls"),
                                    ("pooling_mode_mean_tokens", "mean"),
                                    ("pooling_mode_max_tokens", "max"),
                                    ("pooling_mode_lasttoken", "lasttoken"))
             if pc.get(key)]
    other = [k for k in ("pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens")
             if pc.get(k)]
    if len(modes) != 1 or other:
        raise ValueError(f"pooling config {pc} not handled (exactly one of cls/mean/max/lasttoken)")
    return modes[0], normalize


def parse_args(argv):
    """(model_dir, in_path, out_path, lora dir or None), or None on a usage error."""
    args, lora = [], None
    it = iter(argv)
    for a in it:
        if a == "--lora" or a.startswith("--lora="):
            lora = a[len("--lora="):] if a.startswith("--lora=") else next(it, "")
            if not lora:
                return None
        elif a.startswith("--"):
            return None
        else:
            args.append(a)
    return (*args, lora) if len(args) == 3 else None


def main(argv):
    parsed = parse_args(argv)
    if parsed is None:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    model_dir, in_path, out_path, lora = parsed
    enc = load_encoder(model_dir)
    with open(in_path) as f:
        inputs = json.load(f)["inputs"]
    adapters = Adapters(enc.w)
    outputs = []
    with torch.no_grad():
        for item in inputs:
            try:
                enc.w = adapters.weights(item["lora"] if "lora" in item else lora)
            except AdapterError as e:
                print(f"bert_reference: {e}", file=sys.stderr)
                return 1
            type_ids = item.get("type_ids") or [0] * len(item["ids"])
            outputs.append([float(v) for v in enc.run(item["ids"], type_ids)])
    with open(out_path, "w") as f:
        json.dump({"outputs": outputs}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
