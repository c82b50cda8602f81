"""Reference forward pass of a DistilBERT encoder (distilbert-base-*, the models fine-tuned
from it, sentence-transformers' msmarco-distilbert-*), for Shoal's native runtime tests.

Used through bert_reference.py (same command line and files), which picks this
class for config.json's model_type "distilbert"; sparse_multivector_reference.py's
splade takes its body (body_only) for a DistilBertForMaskedLM and applies the MLM
head (vocab_transform, vocab_layer_norm, vocab_projector) itself.

Written as plain float64 torch tensor operations from the architecture's
definition (transformers' DistilBertModel), on weights read by our own safetensors
reader, one sequence at a time:
  embeddings: LayerNorm(word_embeddings[ids] + position_embeddings[0..T-1]); no token
    type embeddings (DistilBERT has none: an input's type_ids are accepted and
    ignored, as its tokenizer makes none);
  each layer (transformer.layer.N), BERT's post-norm layer under other names:
    sa = sa_layer_norm(x + out_lin(attention(x))), attention with q_lin / k_lin /
    v_lin (biases), scores q . k / sqrt(dim / n_heads), softmax over the keys;
    x = output_layer_norm(sa + ffn.lin2(act(ffn.lin1(sa)))), act config.json's
    "activation" (gelu: erf);
  every LayerNorm's eps is 1e-12 (fixed in DistilBERT's code; the config has none).
Config keys are DistilBertConfig's: dim, n_layers, n_heads, hidden_dim, activation,
max_position_embeddings, sinusoidal_pos_embds (a sinusoidal table is still a stored
parameter, read as any other).
Heads (the body under "distilbert."): DistilBertForSequenceClassification:
classifier(relu(pre_classifier(h[0]))) (the first token; dropout aside);
DistilBertForTokenClassification: classifier on every token; embedders (the bare
DistilBertModel, sentence-transformers' layout): sentence-transformers' pooling and
Normalize. DistilBertForMaskedLM: the body only (body_only).

Configs this does not implement exit with a message: an activation other than
bert_reference.py's (gelu, gelu_new, gelu_pytorch_tanh, relu), a dim not divisible by
n_heads, an architecture with another head (question answering, multiple choice).
"""

import torch

from bert_reference import ACTIVATIONS, Checkpoint

EPS = 1e-12  # every nn.LayerNorm in modeling_distilbert.py
HEADS = ("DistilBertModel", "DistilBertForSequenceClassification", "DistilBertForTokenClassification",
         "DistilBertForMaskedLM")


def unsupported(cfg):
    """The config keys this reference does not implement, as messages."""
    out = []
    if cfg.get("model_type") != "distilbert":
        out.append(f"model_type {cfg.get('model_type')!r} (only distilbert)")
    if cfg.get("activation", "gelu") not in ACTIVATIONS:
        out.append(f"activation {cfg.get('activation')!r}")
    if cfg.get("dim", 768) % cfg.get("n_heads", 12):
        out.append(f"dim {cfg.get('dim')} not a multiple of n_heads {cfg.get('n_heads')}")
    arch = (cfg.get("architectures") or ["DistilBertModel"])[0]
    if arch not in HEADS:
        out.append(f"architecture {arch} (only {', '.join(HEADS)})")
    return out


class DistilBertEncoder(Checkpoint):
    def __init__(self, model_dir, body_only=False):
        """body_only: read just the body (for hidden_states), not the sentence-transformers
        pooling an embedder's run() needs (as bert_reference.Encoder's)."""
        cfg = self.read_config(model_dir, "distilbert", "distilbert_reference", unsupported)
        # DistilBertConfig's defaults where a key is missing.
        self.heads = cfg.get("n_heads", 12)
        self.head_dim = cfg.get("dim", 768) // self.heads
        self.layers = cfg.get("n_layers", 6)
        self.act = ACTIVATIONS[cfg.get("activation", "gelu")]
        self.eps = EPS

        self.load_weights(model_dir, "distilbert.", body_only=body_only)  # a *For* head's body is under it

    def hidden_states(self, ids, type_ids=None, attended=None):
        """[seq, dim] output of the last layer. type_ids: checked for length, else
        ignored (no token types). attended: how many leading positions may be
        attended to as keys (None: all), as bert_reference.Encoder's."""
        ids = torch.tensor(ids, dtype=torch.long)
        if type_ids is not None and len(type_ids) != len(ids):
            raise ValueError("ids and type_ids differ in length")
        x = (self.p("embeddings.word_embeddings.weight")[ids]
             + self.p("embeddings.position_embeddings.weight")[torch.arange(len(ids))])
        x = self.norm(x, "embeddings.LayerNorm")
        for n in range(self.layers):
            L = f"transformer.layer.{n}."
            attn = [L + "attention." + p for p in ("q_lin", "k_lin", "v_lin", "out_lin")]
            sa = self.norm(x + self.self_attention(x, attn, attended), L + "sa_layer_norm")
            ffn = self.dense(self.act(self.dense(sa, L + "ffn.lin1")), L + "ffn.lin2")
            x = self.norm(sa + ffn, L + "output_layer_norm")
        return x

    def classify(self, first):
        """The sequence classifier's logits from the first token's last state."""
        pre = torch.clamp(self.dense(first, "pre_classifier", prefixed=False), min=0.0)  # ReLU
        return self.dense(pre, "classifier", prefixed=False)
