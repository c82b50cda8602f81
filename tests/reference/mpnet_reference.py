"""Reference forward pass of an MPNet encoder (microsoft/mpnet-base and what is fine-tuned
from it: sentence-transformers' all-mpnet-base-v2 and multi-qa-mpnet-base-*, the MPNet
cross-encoders and token classifiers), for Shoal's native runtime tests.

Used through bert_reference.py (same command line and files), which picks this
class for config.json's model_type "mpnet"; extraction_reference.py takes it the same
way for an MPNetForTokenClassification / MPNetForSequenceClassification.

Written as plain float64 torch tensor operations from the architecture's
definition (transformers' MPNetModel), on weights read by our own safetensors
reader, one sequence at a time:
  embeddings: LayerNorm(word_embeddings[ids] + position_embeddings[pos]) with RoBERTa's
    position ids, pos = PADDING_IDX + cumulative count of non-pad tokens (pad tokens
    get PADDING_IDX): 2, 3, 4, ... for a sequence without padding. PADDING_IDX is 1,
    fixed in MPNetEmbeddings (not read from pad_token_id; the real configs say 1 too).
    No token type embeddings (MPNet has none: an input's type_ids are accepted and
    ignored, as MPNetTokenizer makes none);
  relative position bias, computed once and shared by every layer: for query i and
    key j (positions 0..T-1, not the padding-aware ids above, though for the real tokens
    of a right- or left-padded row the two give the same j - i: they differ only around
    a pad id inside a sequence, which no tokenizer produces), bucket(j - i) with T5's
    bidirectional bucketing as MPNetEncoder.relative_position_bucket writes it
    (num_buckets 32, max_distance 128):
      n = i - j; half = num_buckets // 2; ret = half if n < 0 else 0; n = |n|;
      max_exact = half // 2;
      ret += n if n < max_exact else
             min(half - 1, max_exact + trunc(log(n / max_exact) / log(max_distance / max_exact)
                                            * (half - max_exact)))
    and bias[h, i, j] = encoder.relative_attention_bias.weight[bucket(j - i), h]
    (relative_bucket below; the logarithm in float64 here, in float32 in transformers:
    the integer buckets agree for every distance up to 4096, as `mpnet_reference.py
    --check` shows against transformers' formula run verbatim in float32);
  each layer (encoder.layer.N), BERT's post-norm layer under other names:
    scores = q . k / sqrt(head_dim) + bias[h], q / k / v = attention.attn.q / k / v
    (biases), softmax over the keys, attn = attention.attn.o(probs . v);
    h1 = attention.LayerNorm(attn + x); x = output.LayerNorm(h1 +
    output.dense(act(intermediate.dense(h1)))), act hidden_act (gelu: erf);
  every LayerNorm's eps is config.json's layer_norm_eps (1e-05 in the real ones).
Heads (the body under "mpnet."): MPNetForSequenceClassification: RoBERTa's
classification head, classifier.out_proj(tanh(classifier.dense(h[0]))) (dropout aside);
MPNetForTokenClassification: classifier on every token; embedders (the bare MPNetModel,
sentence-transformers' layout; all-mpnet-base-v2's config says MPNetForMaskedLM, its
weights are the bare model's, and is read the same): sentence-transformers' pooling and
Normalize. The bare model's pooler (saved by sentence-transformers) is not used.

Configs this does not implement exit with a message: relative_attention_num_buckets
other than 32 (transformers' MPNetEncoder.forward buckets with its default of 32 whatever
the config says, indexing a table of the config's size: a smaller table fails, a larger
one leaves rows unused; the real models all have 32), a hidden_act other than
bert_reference.py's (gelu, gelu_new, gelu_pytorch_tanh, relu), a hidden_size not
divisible by num_attention_heads, an architecture with another head (question answering,
multiple choice).

python3 mpnet_reference.py --check prints the bucket table for distances -20..20 and
checks the float64 buckets against transformers' float32 formula for distances up to
4096.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_reference import ACTIVATIONS, Checkpoint  # noqa: E402

PADDING_IDX = 1       # MPNetEmbeddings.padding_idx, fixed in modeling_mpnet.py
NUM_BUCKETS = 32      # MPNetEncoder.compute_position_bias's default, which forward() uses
MAX_DISTANCE = 128    # relative_position_bucket's default
HEADS = ("MPNetModel", "MPNetForMaskedLM", "MPNetForSequenceClassification",
         "MPNetForTokenClassification")


def relative_bucket(relative_position, num_buckets=NUM_BUCKETS, max_distance=MAX_DISTANCE):
    """MPNetEncoder.relative_position_bucket for one relative position (memory position
    minus context position, j - i), in Python integers and float64."""
    ret = 0
    n = -relative_position
    num_buckets //= 2
    if n < 0:
        ret += num_buckets
    n = abs(n)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n
    large = max_exact + int(math.log(n / max_exact) / math.log(max_distance / max_exact)
                            * (num_buckets - max_exact))  # int(): truncation toward zero, as .to(long)
    return ret + min(large, num_buckets - 1)


def relative_buckets_float32(relative_position, num_buckets=NUM_BUCKETS, max_distance=MAX_DISTANCE):
    """transformers' MPNetEncoder.relative_position_bucket, verbatim, on a tensor of
    relative positions: the logarithm of a float32 tensor, divided by a Python float (a
    float32 operation), times an int, truncated by .to(torch.long). For --check only."""
    ret = 0
    n = -relative_position
    num_buckets //= 2
    ret += (n < 0).to(torch.long) * num_buckets
    n = torch.abs(n)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (
        torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    ret += torch.where(is_small, n, val_if_large)
    return ret


def unsupported(cfg):
    """The config keys this reference does not implement, as messages."""
    out = []
    if cfg.get("model_type") != "mpnet":
        out.append(f"model_type {cfg.get('model_type')!r} (only mpnet)")
    if cfg.get("relative_attention_num_buckets", 32) != NUM_BUCKETS:
        out.append(f"relative_attention_num_buckets {cfg.get('relative_attention_num_buckets')} "
                   f"(transformers buckets with {NUM_BUCKETS} whatever the config says)")
    if cfg.get("hidden_act", "gelu") not in ACTIVATIONS:
        out.append(f"hidden_act {cfg.get('hidden_act')!r}")
    if cfg.get("hidden_size", 768) % cfg.get("num_attention_heads", 12):
        out.append(f"hidden_size {cfg.get('hidden_size')} not a multiple of num_attention_heads "
                   f"{cfg.get('num_attention_heads')}")
    arch = (cfg.get("architectures") or ["MPNetModel"])[0]
    if arch not in HEADS:
        out.append(f"architecture {arch} (only {', '.join(HEADS)})")
    return out


class MPNetEncoder(Checkpoint):
    def __init__(self, model_dir, body_only=False):
        """body_only: read just the body (for hidden_states), not the sentence-transformers
        pooling an embedder's run() needs (as bert_reference.Encoder's)."""
        cfg = self.read_config(model_dir, "mpnet", "mpnet_reference", unsupported)
        # MPNetConfig's defaults where a key is missing.
        self.heads = cfg.get("num_attention_heads", 12)
        self.head_dim = cfg.get("hidden_size", 768) // self.heads
        self.layers = cfg.get("num_hidden_layers", 12)
        self.act = ACTIVATIONS[cfg.get("hidden_act", "gelu")]
        self.eps = cfg.get("layer_norm_eps", 1e-12)

        self.load_weights(model_dir, "mpnet.", body_only=body_only)  # a *For* head's body is under it

    @staticmethod
    def position_ids(ids):
        """RoBERTa's (create_position_ids_from_input_ids): non-pad tokens are numbered
        PADDING_IDX + 1, + 2, ...; pad tokens get PADDING_IDX."""
        not_pad = (ids != PADDING_IDX).long()
        return torch.cumsum(not_pad, dim=0) * not_pad + PADDING_IDX

    def position_bias(self, seq):
        """[heads, seq, seq]: relative_attention_bias[bucket(j - i), h] for query i, key j."""
        pos = torch.arange(seq)
        rel = pos[None, :] - pos[:, None]                       # [i, j] = j - i
        table = {int(r): relative_bucket(int(r)) for r in torch.unique(rel)}
        buckets = rel.clone().apply_(lambda r: table[r])
        values = self.p("encoder.relative_attention_bias.weight")[buckets]   # [seq, seq, heads]
        return values.permute(2, 0, 1)

    def hidden_states(self, ids, type_ids=None, attended=None):
        """[seq, hidden] output of the last layer. type_ids: checked for length, else
        ignored (no token types). attended: how many leading positions may be
        attended to as keys (None: all), as bert_reference.Encoder's."""
        ids = torch.tensor(ids, dtype=torch.long)
        if type_ids is not None and len(type_ids) != len(ids):
            raise ValueError("ids and type_ids differ in length")
        x = (self.p("embeddings.word_embeddings.weight")[ids]
             + self.p("embeddings.position_embeddings.weight")[self.position_ids(ids)])
        x = self.norm(x, "embeddings.LayerNorm")
        bias = self.position_bias(len(ids))
        for n in range(self.layers):
            L = f"encoder.layer.{n}."
            attn = [L + "attention.attn." + p for p in "qkvo"]
            h1 = self.norm(self.self_attention(x, attn, attended, bias) + x, L + "attention.LayerNorm")
            ffn = self.dense(self.act(self.dense(h1, L + "intermediate.dense")), L + "output.dense")
            x = self.norm(ffn + h1, L + "output.LayerNorm")
        return x

    def classify(self, first):
        """The sequence classifier's logits from the first token's last state."""
        pre = torch.tanh(self.dense(first, "classifier.dense", prefixed=False))
        return self.dense(pre, "classifier.out_proj", prefixed=False)


def check_buckets(limit=4096):
    """Prints the buckets of relative positions j - i = -20..20; exits 1 if the float64
    buckets differ from transformers' float32 ones anywhere in -limit..limit (computed
    as transformers does, on one [T, T] matrix of j - i, so with the vectorized log).
    The float results are exact integers at |j - i| = 16, 32, 64 and 128 (2, 4, 6, 8:
    log(2^k) / log(16) * 8), where a logarithm one ulp low would truncate to the bucket
    below; both agree there (float64's log and this torch's float32 one are exact)."""
    print(" ".join(f"{r}:{relative_bucket(r)}" for r in range(-20, 21)))
    pos = torch.arange(limit + 1)
    rel = pos[None, :] - pos[:, None]                                    # [i, j]: j - i
    want = relative_buckets_float32(rel)
    got = torch.tensor([relative_bucket(r) for r in range(-limit, limit + 1)])[rel + limit]
    bad = torch.unique(rel[got != want]).tolist()
    if bad:
        print(f"float64 and float32 buckets differ at j - i = {bad[:20]}", file=sys.stderr)
        return 1
    print(f"float64 buckets equal transformers' float32 ones for |j - i| <= {limit}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--check"]:
        sys.exit(check_buckets())
    print("usage: mpnet_reference.py --check (the forward pass runs through bert_reference.py)",
          file=sys.stderr)
    sys.exit(2)
