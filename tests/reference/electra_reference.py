"""Reference forward pass of an ELECTRA encoder (google/electra-*-discriminator and what is
fine-tuned from it: cross-encoder/ms-marco-electra-base, ELECTRA text classifiers and NER
models, ELECTRA embedders saved by sentence-transformers), for Shoal's native runtime tests.

Used through bert_reference.py (same command line and files), which picks this
class for config.json's model_type "electra"; extraction_reference.py takes it the same
way for an ElectraForTokenClassification / ElectraForSequenceClassification.

Written as plain float64 torch tensor operations from the architecture's
definition (transformers' ElectraModel), on weights read by our own safetensors
reader, one sequence at a time:
  embeddings (ElectraEmbeddings, BERT's at embedding_size wide): LayerNorm(word_embeddings[ids]
    + position_embeddings[0..T-1] + token_type_embeddings[type_ids]), eps layer_norm_eps;
  then, only when embedding_size != hidden_size (ElectraModel builds it only then),
    embeddings_project (Linear embedding_size -> hidden_size, with bias) on that output;
    no activation and no LayerNorm after it;
  each layer (encoder.layer.N), BERT's post-norm layer under BERT's names:
    scores = q . k / sqrt(hidden / heads), q / k / v = attention.self.query / key / value
    (biases), softmax over the keys, attn = attention.output.dense(probs . v);
    h1 = attention.output.LayerNorm(attn + x); x = output.LayerNorm(h1 +
    output.dense(act(intermediate.dense(h1)))), act hidden_act (gelu: erf);
  every LayerNorm's eps is config.json's layer_norm_eps (1e-12 in the real ones). No pooler.
Heads (the body under "electra."): ElectraForSequenceClassification's
ElectraClassificationHead: classifier.out_proj(gelu(classifier.dense(h[0]))) with the erf
GELU whatever hidden_act says (transformers hard-codes get_activation("gelu") there;
RoBERTa's head has tanh) (dropout aside); ElectraForTokenClassification: classifier on
every token; embedders (the bare ElectraModel, sentence-transformers' layout; a raw
ElectraForPreTraining discriminator's body, under "electra.", is read the same, its
discriminator_predictions head unused): sentence-transformers' pooling and Normalize.
The summary_* config keys (ElectraForMultipleChoice's SequenceSummary) are not read.

Configs this does not implement exit with a message: position_embedding_type other than
absolute, a hidden_act other than bert_reference.py's (gelu, gelu_new, gelu_pytorch_tanh,
relu), a hidden_size not divisible by num_attention_heads, an architecture with another
head (question answering, multiple choice, the generator's ElectraForMaskedLM).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_reference import ACTIVATIONS, Checkpoint, gelu_erf  # noqa: E402

HEADS = ("ElectraModel", "ElectraForPreTraining", "ElectraForSequenceClassification",
         "ElectraForTokenClassification")


def unsupported(cfg):
    """The config keys this reference does not implement, as messages."""
    out = []
    if cfg.get("model_type") != "electra":
        out.append(f"model_type {cfg.get('model_type')!r} (only electra)")
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        out.append(f"position_embedding_type {cfg.get('position_embedding_type')!r} (only absolute)")
    if cfg.get("hidden_act", "gelu") not in ACTIVATIONS:
        out.append(f"hidden_act {cfg.get('hidden_act')!r}")
    if cfg.get("hidden_size", 256) % cfg.get("num_attention_heads", 4):
        out.append(f"hidden_size {cfg.get('hidden_size')} not a multiple of num_attention_heads "
                   f"{cfg.get('num_attention_heads')}")
    arch = (cfg.get("architectures") or ["ElectraModel"])[0]
    if arch not in HEADS:
        out.append(f"architecture {arch} (only {', '.join(HEADS)})")
    return out


class ElectraEncoder(Checkpoint):
    def __init__(self, model_dir, body_only=False):
        """body_only: read just the body (for hidden_states), not the sentence-transformers
        pooling an embedder's run() needs (as bert_reference.Encoder's)."""
        cfg = self.read_config(model_dir, "electra", "electra_reference", unsupported)
        # ElectraConfig's defaults (electra-small's) where a key is missing.
        hidden = cfg.get("hidden_size", 256)
        self.heads = cfg.get("num_attention_heads", 4)
        self.head_dim = hidden // self.heads
        self.layers = cfg.get("num_hidden_layers", 12)
        self.act = ACTIVATIONS[cfg.get("hidden_act", "gelu")]
        self.eps = cfg.get("layer_norm_eps", 1e-12)
        self.project = cfg.get("embedding_size", 128) != hidden

        self.load_weights(model_dir, "electra.", body_only=body_only)  # a *For* head's body is under it
        if self.project != (self.prefix + "embeddings_project.weight" in self.w):
            sys.exit(f"electra_reference: {model_dir}: embedding_size {cfg.get('embedding_size', 128)}, "
                     f"hidden_size {hidden}, but embeddings_project "
                     f"{'missing' if self.project else 'present'} in the checkpoint")

    def hidden_states(self, ids, type_ids=None, attended=None):
        """[seq, hidden] output of the last layer. type_ids: token types (None: all 0).
        attended: how many leading positions may be attended to as keys (None: all),
        as bert_reference.Encoder's."""
        ids = torch.tensor(ids, dtype=torch.long)
        type_ids = (torch.zeros_like(ids) if type_ids is None
                    else torch.tensor(type_ids, dtype=torch.long))
        if len(type_ids) != len(ids):
            raise ValueError("ids and type_ids differ in length")
        x = (self.p("embeddings.word_embeddings.weight")[ids]
             + self.p("embeddings.position_embeddings.weight")[torch.arange(len(ids))]
             + self.p("embeddings.token_type_embeddings.weight")[type_ids])
        x = self.norm(x, "embeddings.LayerNorm")                         # [seq, embedding_size]
        if self.project:
            x = self.dense(x, "embeddings_project")                      # [seq, hidden]
        for n in range(self.layers):
            L = f"encoder.layer.{n}."
            attn = [L + "attention." + p for p in ("self.query", "self.key", "self.value", "output.dense")]
            h1 = self.norm(self.self_attention(x, attn, attended) + x, L + "attention.output.LayerNorm")
            ffn = self.dense(self.act(self.dense(h1, L + "intermediate.dense")), L + "output.dense")
            x = self.norm(ffn + h1, L + "output.LayerNorm")
        return x

    def classify(self, first):
        """The sequence classifier's logits from the first token's last state
        (ElectraClassificationHead: the erf GELU, not hidden_act, not tanh)."""
        pre = gelu_erf(self.dense(first, "classifier.dense", prefixed=False))
        return self.dense(pre, "classifier.out_proj", prefixed=False)


if __name__ == "__main__":
    print("usage: the forward pass runs through bert_reference.py", file=sys.stderr)
    sys.exit(2)
