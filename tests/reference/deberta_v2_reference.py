"""Reference forward pass of a DeBERTa-v2 / v3 encoder, for Shoal's native runtime tests.

Used through bert_reference.py (same command line and files), which picks this
class for config.json's model_type "deberta-v2" (and "deberta", to refuse it).

Written as plain float64 torch tensor operations from the architecture's
definition (the DeBERTa papers and transformers' DebertaV2Model), on weights
read by our own safetensors reader, one sequence at a time:
  embeddings: word_embeddings[ids] (+ position_embeddings[0..T-1] when
    position_biased_input, + token_type_embeddings[type_ids] when
    type_vocab_size > 0), then LayerNorm;
  relative positions: r = i - j for query i and key j; with position_buckets > 0,
    mid = position_buckets // 2 and max_position = max_relative_positions (or
    max_position_embeddings when that is < 1), |r| < mid keeps r, larger |r| go to
    sign(r) * (mid + ceil(log(|r| / mid) / log((max_position - 1) / mid) * (mid - 1)));
    att_span = position_buckets (or max_position without buckets);
    delta(i, j) = clamp(bucket(i - j) + att_span, 0, 2 * att_span - 1);
  rel = encoder.rel_embeddings[0 : 2 * att_span], through encoder.LayerNorm when
    norm_rel_ebd has "layer_norm";
  each layer, post-norm as BERT: h = LN(x + dense(attention(x))),
    x = LN(h + dense(act(dense(h))));
    attention, per head: scores = q_i . k_j (content to content)
      + q_i . pos_k[delta(i, j)] (c2p)
      + k_j . pos_q[clamp(att_span - bucket(j - i), 0, 2 * att_span - 1)]
        (p2c; the same row as delta(i, j), bucket being odd),
      all over sqrt(head_dim * (1 + the number of c2p / p2c terms in pos_att_type)),
      where pos_k and pos_q are key_proj and query_proj (biases included) of rel
      (share_att_key); softmax over j, times v;
Heads: DebertaV2ForSequenceClassification: ContextPooler (pooler.dense on the first
token, then pooler_hidden_act), then classifier; ForTokenClassification: classifier on
every token; embedders (DebertaV2Model): sentence-transformers' pooling and Normalize.

The log buckets are computed in float64 here; transformers computes them in float32.
The two agree on every distance below max_position_embeddings for both the tiny test
models (16 buckets, 128 positions) and DeBERTa-v3's own (256 buckets, 512 positions):
the one exact integer, at |r| = max_position - 1, divides a logarithm by itself.

Configs this does not implement exit with a message: DeBERTa v1 (model_type
"deberta"), separate position projections (share_att_key false), p2p attention, the
convolution layer (conv_kernel_size > 0), embedding_size other than hidden_size.
"""
import math

import torch

from bert_reference import ACTIVATIONS, Checkpoint, attend


def pos_att_types(cfg):
    """pos_att_type as a list: older configs write it as "p2c|c2p"."""
    value = cfg.get("pos_att_type") or []
    if isinstance(value, str):
        value = [x.strip() for x in value.lower().split("|")]
    return [x for x in value if x and x != "none"]


def norm_rel_ebd(cfg):
    return [x.strip() for x in str(cfg.get("norm_rel_ebd", "none")).lower().split("|")]


def unsupported(cfg):
    """The config keys this reference does not implement, as messages."""
    out = []
    if cfg.get("model_type") != "deberta-v2":
        out.append(f"model_type {cfg.get('model_type')!r} (only deberta-v2: DeBERTa v1's "
                   "attention and embeddings differ)")
    if cfg.get("embedding_size", cfg["hidden_size"]) != cfg["hidden_size"]:
        out.append(f"embedding_size {cfg['embedding_size']} (only hidden_size, no embed_proj)")
    if cfg.get("conv_kernel_size", 0) > 0:
        out.append(f"conv_kernel_size {cfg['conv_kernel_size']} (the convolution layer)")
    if cfg.get("relative_attention", False):
        if not cfg.get("share_att_key", False):
            out.append("share_att_key false (pos_key_proj / pos_query_proj)")
        types = pos_att_types(cfg)
        if "p2p" in types:
            out.append("p2p in pos_att_type")
        other = [t for t in types if t not in ("c2p", "p2c", "p2p")]
        if other:
            out.append(f"pos_att_type {other}")
    other = [x for x in norm_rel_ebd(cfg) if x not in ("none", "layer_norm")]
    if other:
        out.append(f"norm_rel_ebd {other} (only none, layer_norm)")
    if cfg["hidden_act"] not in ACTIVATIONS:
        out.append(f"hidden_act {cfg['hidden_act']!r}")
    if cfg.get("pooler_hidden_act", "gelu") not in ACTIVATIONS:
        out.append(f"pooler_hidden_act {cfg['pooler_hidden_act']!r}")
    return out


def bucket(r, buckets, max_position):
    """The relative position r = i - j as DeBERTa-v2 buckets it (integers, float64 math)."""
    if buckets <= 0:
        return r
    mid = buckets // 2
    abs_pos = mid - 1 if -mid < r < mid else abs(r)
    if abs_pos <= mid:
        return r
    log_pos = math.ceil(math.log(abs_pos / mid) / math.log((max_position - 1) / mid) * (mid - 1)) + mid
    return int(math.copysign(log_pos, r))


class DebertaV2Encoder(Checkpoint):
    def __init__(self, model_dir):
        cfg = self.read_config(model_dir, "deberta-v2", "deberta_v2_reference", unsupported)
        self.heads = cfg["num_attention_heads"]
        self.head_dim = cfg.get("attention_head_size", cfg["hidden_size"] // self.heads)
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg.get("layer_norm_eps", 1e-7)
        self.act = ACTIVATIONS[cfg.get("hidden_act", "gelu")]
        self.pooler_act = ACTIVATIONS[cfg.get("pooler_hidden_act", "gelu")]
        self.position_biased_input = cfg.get("position_biased_input", True)
        self.type_vocab = cfg.get("type_vocab_size", 0)
        self.relative = cfg.get("relative_attention", False)
        self.pos_att_type = pos_att_types(cfg)
        self.norm_rel = "layer_norm" in norm_rel_ebd(cfg)
        self.buckets = cfg.get("position_buckets", -1)
        self.max_relative = cfg.get("max_relative_positions", -1)
        if self.max_relative < 1:
            self.max_relative = cfg.get("max_position_embeddings", 512)
        self.att_span = self.buckets if self.buckets > 0 else self.max_relative

        self.load_weights(model_dir, "deberta.")  # a *For* head's body is under it

    def split_heads(self, y):
        """[n, heads * head_dim] -> [heads, n, head_dim]."""
        return y.reshape(y.shape[0], self.heads, self.head_dim).transpose(0, 1)

    def relative_index(self, seq):
        """Rows of the 2 * att_span relative embeddings, [seq, seq] each: c2p's
        [query i][key j] = clamp(att_span + bucket(i - j)), p2c's [key j][query i] =
        clamp(att_span - bucket(j - i))."""
        top = 2 * self.att_span - 1
        b = torch.tensor([[bucket(i - j, self.buckets, self.max_relative) for j in range(seq)]
                          for i in range(seq)], dtype=torch.long)
        return torch.clamp(self.att_span + b, 0, top), torch.clamp(self.att_span - b, 0, top)

    def relative_embeddings(self):
        rel = self.p("encoder.rel_embeddings.weight")
        if self.norm_rel:
            rel = self.norm(rel, "encoder.LayerNorm")
        return rel[:2 * self.att_span]

    def attention(self, x, L, rel, index):
        seq = x.shape[0]
        q = self.split_heads(self.dense(x, L + "attention.self.query_proj"))   # [heads, seq, dh]
        k = self.split_heads(self.dense(x, L + "attention.self.key_proj"))
        v = self.split_heads(self.dense(x, L + "attention.self.value_proj"))
        terms = [t for t in ("c2p", "p2c") if t in self.pos_att_type]
        scale = math.sqrt(self.head_dim * (1 + len(terms)))
        scores = q @ k.transpose(1, 2) / scale                                  # [heads, seq, seq]
        if self.relative:
            c2p_index, p2c_index = index
            if "c2p" in terms:
                pos_k = self.split_heads(self.dense(rel, L + "attention.self.key_proj"))  # [heads, 2span, dh]
                c2p = q @ pos_k.transpose(1, 2)                                 # [heads, seq, 2span]
                scores = scores + torch.gather(c2p, 2, c2p_index.expand(self.heads, seq, seq)) / scale
            if "p2c" in terms:
                pos_q = self.split_heads(self.dense(rel, L + "attention.self.query_proj"))
                p2c = k @ pos_q.transpose(1, 2)                                 # [heads, seq (key), 2span]
                # [key j][query i], then transposed: score[i][j] += k_j . pos_q[p2c_index[j][i]]
                gathered = torch.gather(p2c, 2, p2c_index.expand(self.heads, seq, seq))
                scores = scores + gathered.transpose(1, 2) / scale
        context = attend(scores, v)
        return self.dense(context, L + "attention.output.dense")

    def hidden_states(self, ids, type_ids=None):
        """[seq, hidden] output of the last layer."""
        ids = torch.tensor(ids, dtype=torch.long)
        type_ids = torch.zeros_like(ids) if type_ids is None else torch.tensor(type_ids, dtype=torch.long)
        if len(ids) != len(type_ids):
            raise ValueError("ids and type_ids differ in length")
        seq = len(ids)
        x = self.p("embeddings.word_embeddings.weight")[ids]
        if self.position_biased_input:
            x = x + self.p("embeddings.position_embeddings.weight")[torch.arange(seq)]
        if self.type_vocab > 0:
            x = x + self.p("embeddings.token_type_embeddings.weight")[type_ids]
        x = self.norm(x, "embeddings.LayerNorm")
        rel = index = None
        if self.relative:
            rel, index = self.relative_embeddings(), self.relative_index(seq)
        for n in range(self.layers):
            L = f"encoder.layer.{n}."
            h = self.norm(x + self.attention(x, L, rel, index), L + "attention.output.LayerNorm")
            inner = self.act(self.dense(h, L + "intermediate.dense"))
            x = self.norm(h + self.dense(inner, L + "output.dense"), L + "output.LayerNorm")
        return x

    def classify(self, first):
        """The sequence classifier's logits from the first token's last state."""
        pooled = self.pooler_act(self.dense(first, "pooler.dense", prefixed=False))
        return self.dense(pooled, "classifier", prefixed=False)
