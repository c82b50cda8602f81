#!/usr/bin/python3
"""Reference SPLADE sparse vectors, ColBERT token vectors and BGE-M3's three outputs,
for Shoal's native runtime tests.

usage: sparse_multivector_reference.py splade|colbert|bgem3 MODEL_DIR IN.json OUT.json

splade: a sentence-transformers SparseEncoder (modules.json: MLMTransformer, then
SpladePooling), its model a BertForMaskedLM, a (XLM-)RobertaForMaskedLM, a
DistilBertForMaskedLM or a ModernBertForMaskedLM (the body by config.json's model_type,
bert_reference.load_encoder).
  IN.json:  {"inputs": [{"ids": [...]}, ...]}  (token ids as the tokenizer made
            them, [CLS] ... [SEP])
  OUT.json: {"outputs": [[V floats], ...]}  (the whole vocabulary-sized vector)
  The MLM head on the body's last hidden states, by the names the checkpoint has:
  BERT's cls.predictions.transform.dense, the config's hidden_act,
  cls.predictions.transform.LayerNorm (layer_norm_eps), then the decoder: the word
  embeddings transposed (tied) plus cls.predictions.bias, or
  cls.predictions.decoder.weight / .bias when the checkpoint stores them;
  RoBERTa's lm_head.dense, GELU (erf, whatever hidden_act says), lm_head.layer_norm
  (layer_norm_eps), the tied decoder plus lm_head.bias (or lm_head.decoder.*);
  DistilBERT's vocab_transform, the config's activation, vocab_layer_norm (eps
  1e-12), then vocab_projector: its weight tied to the word embeddings (or stored),
  its own vocab_projector.bias; ModernBERT's head.dense (its bias only if stored:
  classifier_bias), the config's classifier_activation, head.norm (norm_eps; its bias
  only if stored: norm_bias), then the decoder: the token embeddings
  (model.embeddings.tok_embeddings, tied) or decoder.weight when stored, plus
  decoder.bias (decoder_bias). Then log(1 + relu(logits)) per token, pooled over all
  tokens by 1_SpladePooling's pooling_strategy: "max" or "sum".

colbert: a PyLate ColBERT (modules.json: Transformer, then PyLate Dense modules),
its options from config_sentence_transformers.json; the body a BERT-family model or
a ModernBertModel (lightonai/GTE-ModernColBERT-v1), by config.json's model_type.
  IN.json:  {"inputs": [{"ids": [...], "query": true|false}, ...]}  (the ids the
            tokenizer made for the text with special tokens, [CLS] text [SEP],
            without the prefix marker)
  OUT.json: {"outputs": [{"ids": [...], "kept": [...], "vectors": [[D floats], ...]}, ...]}
    ids: the sequence the model ran on (marker and query expansion included);
    kept: the indices of the rows kept; vectors: those rows, in order.
  As PyLate's preprocess and encode do: the query_prefix / document_prefix
  token's id (tokenizer.json's added_tokens, by content) goes right after the
  first token; a query with do_query_expansion is padded with the mask token up
  to query_length, and unless attend_to_expansion_tokens those positions are
  masked as attention keys (no token attends to them) while their own rows are
  still computed (ModernBERT's local layers too: a key must be both in the
  window and unmasked; an expansion row left with no such key exits 1); every
  Dense module in turn (weight, bias if stored, its activation: identity only);
  each token vector L2-normalized. A query keeps every row; a document drops the
  rows whose id is one of skiplist_words (looked up in tokenizer.json's
  vocabulary; a word not in it is ignored). An input longer than query_length /
  document_length once the marker is in exits 1 with a message: the caller
  truncates.

bgem3: BAAI/bge-m3's layout: the bare XLMRobertaModel (sentence-transformers'
files) and FlagEmbedding's colbert_linear.pt and sparse_linear.pt (nn.Linear
state dicts, read with torch.load(weights_only=True)).
  IN.json:  {"inputs": [{"ids": [...]}, ...]}  (token ids as the tokenizer made
            them, <s> ... </s>)
  OUT.json: {"outputs": [{"dense": [H floats], "sparse": {"<id>": weight, ...},
                          "colbert": [[D floats], ...]}, ...]}
  As FlagEmbedding's BGEM3 model and BGEM3FlagModel.encode compute them from
  the last hidden states h [T, H]: dense is h[0] (CLS), L2-normalized; sparse
  ("lexical weights"): w = relu(sparse_linear(h)) per token, and for each
  token whose id is not the tokenizer's cls, eos, pad or unk token and whose
  w > 0, weights[id] = max(weights[id], w) (keys: the ids as decimal strings,
  in order of first occurrence; a token with w = 0 leaves no key); colbert:
  colbert_linear(h[1:]) (every row but the first, the last </s> included:
  T - 1 rows), each row L2-normalized.

Float64 throughout, each input alone; the body is bert_reference.py's Encoder
(plain tensor operations from the architecture's definition, weights read by
safetensors_io.py), or for a ModernBERT (SPLADE or ColBERT) modernbert_reference.py's
ModernBertEncoder (its hidden states after final_norm), for a DistilBERT (SPLADE or
ColBERT) distilbert_reference.py's DistilBertEncoder (bert_reference.load_encoder picks them), so this is independent
of the native engine's code.
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_reference import DTYPE, Encoder, gelu_erf, layer_norm, linear, load_encoder  # noqa: E402
from safetensors_io import read_tensors  # noqa: E402


class ModelError(Exception):
    pass


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def modules(model_dir):
    """modules.json as (short type name, path) pairs after the first module."""
    entries = read_json(os.path.join(model_dir, "modules.json"))
    return [(m["type"].rsplit(".", 1)[-1], m["path"]) for m in entries[1:]]


# The masked-language-model heads SPLADE runs on: (transform, its LayerNorm, the
# decoder (its weight tied to the word embeddings unless stored), the decoder's bias
# when not its own, the activation: None for the body's own, hidden_act / activation,
# "classifier" for ModernBERT's classifier_activation). ModernBERT's head has biases
# only as its config says (classifier_bias: head.dense's, norm_bias: head.norm's,
# decoder_bias: decoder.bias); the others always have theirs.
MLM_HEADS = (
    ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
     "cls.predictions.decoder", "cls.predictions.bias", None),            # BertForMaskedLM
    ("lm_head.dense", "lm_head.layer_norm", "lm_head.decoder", "lm_head.bias", gelu_erf),  # RoBERTa's
    ("vocab_transform", "vocab_layer_norm", "vocab_projector", None, None),  # DistilBertForMaskedLM
    ("head.dense", "head.norm", "decoder", None, "classifier"),             # ModernBertForMaskedLM
)

# The tied decoder weight: the body's word (ModernBERT: token) embeddings.
WORD_EMBEDDINGS = ("embeddings.word_embeddings.weight", "embeddings.tok_embeddings.weight")


class Splade:
    def __init__(self, model_dir):
        try:
            self.enc = load_encoder(model_dir, body_only=True)  # BERT family, DistilBERT, ModernBERT
        except ValueError as e:
            raise ModelError(str(e)) from e
        rest = modules(model_dir)
        if [kind for kind, _ in rest] != ["SpladePooling"]:
            raise ModelError(f"modules.json: expected MLMTransformer, SpladePooling; got {rest}")
        pc = read_json(os.path.join(model_dir, rest[0][1], "config.json"))
        self.strategy = pc.get("pooling_strategy", "max")
        if self.strategy not in ("max", "sum"):
            raise ModelError(f"pooling_strategy {self.strategy!r} not handled (max, sum)")
        if pc.get("activation_function", "relu") != "relu":
            raise ModelError(f"activation_function {pc['activation_function']!r} not handled (relu)")
        w = self.enc.w
        head = [h for h in MLM_HEADS if h[0] + ".weight" in w]
        if not head:
            raise ModelError("no masked-language-model head in the checkpoint (BERT's "
                             "cls.predictions.*, RoBERTa's lm_head.*, DistilBERT's vocab_*, "
                             "ModernBERT's head.* and decoder.*)")
        self.transform, self.norm, decoder, bias, act = head[0]
        self.act = self.enc.head_act if act == "classifier" else act or self.enc.act
        self.decoder_weight = w.get(decoder + ".weight")
        if self.decoder_weight is None:
            for name in WORD_EMBEDDINGS:
                try:
                    self.decoder_weight = self.enc.p(name)
                    break
                except KeyError:
                    pass
            else:
                raise ModelError(f"no {decoder}.weight and no word embeddings to tie it to")
        hidden, vocab = self.decoder_weight.shape[1], self.decoder_weight.shape[0]
        cfg = getattr(self.enc, "cfg", {})
        modernbert = act == "classifier"

        def optional_bias(name, wanted, size):
            """name's tensor; zeros when the config says the layer has no bias."""
            if name in w:
                return w[name]
            if wanted:
                raise ModelError(f"no {name} in the checkpoint")
            return torch.zeros(size, dtype=self.decoder_weight.dtype)

        self.transform_bias = optional_bias(self.transform + ".bias",
                                            not modernbert or cfg.get("classifier_bias", False), hidden)
        self.norm_bias = optional_bias(self.norm + ".bias",
                                       not modernbert or cfg.get("norm_bias", False), hidden)
        self.decoder_bias = w.get(decoder + ".bias", w.get(bias) if bias else None)
        if self.decoder_bias is None:
            if not modernbert or cfg.get("decoder_bias", True):
                raise ModelError(f"no {decoder}.bias{' or ' + bias if bias else ''} in the checkpoint")
            self.decoder_bias = torch.zeros(vocab, dtype=self.decoder_weight.dtype)
        dim = pc.get("word_embedding_dimension")
        if dim is not None and dim != self.decoder_weight.shape[0]:
            raise ModelError(f"word_embedding_dimension {dim} != vocabulary "
                                 f"{self.decoder_weight.shape[0]}")

    def run(self, item):
        ids = item["ids"]
        enc, w = self.enc, self.enc.w
        h = enc.hidden_states(ids, [0] * len(ids))
        t = self.act(linear(h, w[self.transform + ".weight"], self.transform_bias))
        t = layer_norm(t, w[self.norm + ".weight"], self.norm_bias, enc.eps)
        logits = linear(t, self.decoder_weight, self.decoder_bias)       # [seq, V]
        values = torch.log1p(torch.clamp(logits, min=0.0))
        pooled = values.max(dim=0).values if self.strategy == "max" else values.sum(dim=0)
        return [float(v) for v in pooled]


def token_id(tokenizer, content):
    """The id of an added token by content, else of a vocabulary entry; None if neither."""
    for t in tokenizer.get("added_tokens", []):
        if t["content"] == content:
            return t["id"]
    return vocabulary(tokenizer).get(content)


def vocabulary(tokenizer):
    vocab = tokenizer["model"]["vocab"]
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        return {piece: i for i, (piece, _) in enumerate(vocab)}
    return vocab


class ColBert:
    def __init__(self, model_dir):
        try:
            self.enc = load_encoder(model_dir, body_only=True)  # BERT family or ModernBERT
        except ValueError as e:
            raise ModelError(str(e)) from e
        st = read_json(os.path.join(model_dir, "config_sentence_transformers.json"))
        tokenizer = read_json(os.path.join(model_dir, "tokenizer.json"))
        tok_config = read_json(os.path.join(model_dir, "tokenizer_config.json"))
        self.query_length = st.get("query_length", 32)
        self.document_length = st.get("document_length", 180)
        self.expand = st.get("do_query_expansion", True)
        self.attend_expansion = self.expand and st.get("attend_to_expansion_tokens", False)
        self.prefix_ids = {}
        for key, default, query in (("query_prefix", "[Q] ", True),
                                    ("document_prefix", "[D] ", False)):
            prefix = st.get(key, default)
            if prefix:
                pid = token_id(tokenizer, prefix)
                if pid is None:
                    raise ModelError(f"{key} {prefix!r} is not a token of tokenizer.json")
                self.prefix_ids[query] = pid
            else:
                self.prefix_ids[query] = None
        mask = tok_config.get("mask_token")
        mask = mask["content"] if isinstance(mask, dict) else mask
        self.mask_id = token_id(tokenizer, mask) if mask else None
        if self.expand and self.mask_id is None:
            raise ModelError("query expansion needs the tokenizer's mask token")
        vocab = vocabulary(tokenizer)
        self.skiplist = {vocab[w] for w in st.get("skiplist_words", []) if w in vocab}
        self.dense = []
        for kind, path in modules(model_dir):
            if kind != "Dense":
                raise ModelError(f"modules.json: module {kind} not handled (Dense only)")
            dc = read_json(os.path.join(model_dir, path, "config.json"))
            act = dc.get("activation_function", "torch.nn.modules.linear.Identity")
            if act != "torch.nn.modules.linear.Identity" or dc.get("use_residual"):
                raise ModelError(f"Dense {dc} not handled (identity activation, no residual)")
            weights = read_tensors(os.path.join(model_dir, path, "model.safetensors"),
                                   dtype=np.float64)
            wt = torch.from_numpy(weights["linear.weight"]).to(DTYPE)
            bias = weights.get("linear.bias") if dc.get("bias") else None
            self.dense.append((wt, None if bias is None else torch.from_numpy(bias).to(DTYPE)))
        if not self.dense:
            raise ModelError("modules.json has no Dense module")

    def run(self, item):
        query = bool(item["query"])
        ids = list(item["ids"])
        prefix = self.prefix_ids[query]
        if prefix is not None:
            ids = ids[:1] + [prefix] + ids[1:]
        limit = self.query_length if query else self.document_length
        if len(ids) > limit:
            raise ModelError(f"{'query' if query else 'document'} of {len(ids)} tokens "
                                 f"(marker included) is longer than {limit}")
        attended = None
        if query and self.expand:
            real = len(ids)
            ids += [self.mask_id] * (self.query_length - real)
            if not self.attend_expansion and real < len(ids):
                attended = real
        try:
            x = self.enc.hidden_states(ids, [0] * len(ids), attended)
        except ValueError as e:  # ModernBERT: an expansion row with no key in its window
            raise ModelError(str(e)) from e
        for wt, bias in self.dense:
            x = x @ wt.T if bias is None else x @ wt.T + bias
        x = x / torch.clamp(torch.sqrt((x * x).sum(dim=-1, keepdim=True)), min=1e-12)
        kept = list(range(len(ids))) if query else \
            [i for i, t in enumerate(ids) if t not in self.skiplist]
        return {"ids": ids, "kept": kept,
                "vectors": [[float(v) for v in x[i]] for i in kept]}


def special_token_id(tokenizer, tok_config, specials, key):
    """The id of tokenizer_config.json's (or special_tokens_map.json's) `key`
    token (a string or an AddedToken dict), or None when it names none."""
    value = tok_config.get(key, specials.get(key))
    content = value["content"] if isinstance(value, dict) else value
    if not content:
        return None
    tid = token_id(tokenizer, content)
    if tid is None:
        raise ModelError(f"{key} {content!r} is not a token of tokenizer.json")
    return tid


def read_linear(path):
    """(weight [out, in], bias [out] or None) of an nn.Linear state dict saved by torch.save."""
    if not os.path.exists(path):
        raise ModelError(f"no {os.path.basename(path)} in the model directory")
    state = torch.load(path, map_location="cpu", weights_only=True)
    if "weight" not in state or state["weight"].dim() != 2:
        raise ModelError(f"{path}: not an nn.Linear state dict (keys {sorted(state)})")
    bias = state.get("bias")
    return state["weight"].to(DTYPE), None if bias is None else bias.to(DTYPE)


class BgeM3:
    def __init__(self, model_dir):
        self.enc = Encoder(model_dir, body_only=True)
        tokenizer = read_json(os.path.join(model_dir, "tokenizer.json"))
        tok_config = read_json(os.path.join(model_dir, "tokenizer_config.json"))
        specials_path = os.path.join(model_dir, "special_tokens_map.json")
        specials = read_json(specials_path) if os.path.exists(specials_path) else {}
        # BGEM3FlagModel's unused_tokens: cls, eos, pad and unk.
        self.unused = {special_token_id(tokenizer, tok_config, specials, key)
                       for key in ("cls_token", "eos_token", "pad_token", "unk_token")} - {None}
        hidden = self.enc.cfg["hidden_size"]
        self.colbert_weight, self.colbert_bias = read_linear(
            os.path.join(model_dir, "colbert_linear.pt"))
        self.sparse_weight, self.sparse_bias = read_linear(
            os.path.join(model_dir, "sparse_linear.pt"))
        if self.colbert_weight.shape[1] != hidden:
            raise ModelError(f"colbert_linear.pt: weight {list(self.colbert_weight.shape)} "
                             f"does not take hidden_size {hidden}")
        if list(self.sparse_weight.shape) != [1, hidden]:
            raise ModelError(f"sparse_linear.pt: weight {list(self.sparse_weight.shape)}, "
                             f"expected [1, {hidden}]")

    def run(self, item):
        ids = list(item["ids"])
        if not ids:
            raise ModelError("an input has no ids")
        h = self.enc.hidden_states(ids, [0] * len(ids))                # [T, H]
        dense = h[0] / torch.clamp(torch.sqrt((h[0] * h[0]).sum()), min=1e-12)
        w = h @ self.sparse_weight.T
        if self.sparse_bias is not None:
            w = w + self.sparse_bias
        w = torch.clamp(w[:, 0], min=0.0)                             # relu, [T]
        sparse = {}
        for tid, weight in zip(ids, w.tolist()):
            if tid not in self.unused and weight > 0:
                key = str(tid)
                if weight > sparse.get(key, 0.0):
                    sparse[key] = weight
        c = h[1:] @ self.colbert_weight.T
        if self.colbert_bias is not None:
            c = c + self.colbert_bias
        c = c / torch.clamp(torch.sqrt((c * c).sum(dim=-1, keepdim=True)), min=1e-12)
        return {"dense": [float(v) for v in dense], "sparse": sparse,
                "colbert": [[float(v) for v in row] for row in c]}


MODES = {"splade": Splade, "colbert": ColBert, "bgem3": BgeM3}


def main(argv):
    if len(argv) != 4 or argv[0] not in MODES:
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    kind, model_dir, in_path, out_path = argv
    try:
        model = MODES[kind](model_dir)
        inputs = read_json(in_path)["inputs"]
        with torch.no_grad():
            outputs = [model.run(item) for item in inputs]
    except ModelError as e:
        print(f"sparse_multivector_reference: {e}", file=sys.stderr)
        return 1
    with open(out_path, "w") as f:
        json.dump({"outputs": outputs}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
