"""Reference forward pass of a JinaBERT encoder (jina-embeddings-v2, jina-reranker-v1),
for Shoal's native runtime tests.

Used through bert_reference.py (same command line and files), which picks this
class for config.json's model_type "bert" with position_embedding_type "alibi".

Written as plain float64 torch tensor operations from the architecture's
definition (jina's modeling_bert.py, JinaBertModel, and the ALiBi paper), on
weights read by our own safetensors reader, one sequence at a time:
  embeddings: LayerNorm(word_embeddings[ids] + token_type_embeddings[type_ids]) (no
    position table);
  ALiBi: head h's score for query i and key j gets -slope[h] * |i - j| after the
    1/sqrt(head_dim) scale (symmetric: an encoder); for n heads, n a power of two,
    slope[h] = 2^(-8 (h + 1) / n); otherwise, with c the largest power of two below n,
    the c slopes of c heads, then every other one of 2c heads' (the 1st, 3rd, ...),
    n - c of them;
  each layer, post-norm as BERT: h = LN(x + dense(attention(x))) with query / key /
    value biases; then feed_forward_type "geglu": u = mlp.gated_layers(h) (no bias),
    its first intermediate_size columns through GELU (erf; jina's GLU uses nn.GELU
    whatever hidden_act says) times the rest, x = mlp.layernorm(h + mlp.wo(...));
    or "original": BERT's intermediate (hidden_act) / output, as bert_reference.py;
Heads: JinaBertForSequenceClassification: BERT's pooler (dense + tanh on the first
token), then classifier; JinaBertForTokenClassification: classifier on every token;
embedders (JinaBertModel, the bare model): sentence-transformers' pooling and
Normalize.

jina's code builds the slopes in float32 (torch.Tensor) and the bias in the
attention's dtype; here both are float64. With 8 heads or fewer (6 in the test
models) every slope is a power of two and each bias an exact float32 as well; with
12 (jina-embeddings-v2-base's) the four interleaved slopes, 2^(-0.5 - k), are not,
and jina's float32 ones differ from these by their rounding.

Configs this does not implement exit with a message: feed_forward_type "reglu" or
another, jina-bert-v2-qk-post-norm's layout (jina-embeddings-v2-base-code: q/k
LayerNorms, up_gated_layer / down_layer), a hidden_act the original feed-forward does
not know, a hidden_size not divisible by num_attention_heads.
"""
import math

import torch

from bert_reference import ACTIVATIONS, Checkpoint, DTYPE, attend, gelu_erf

FEED_FORWARD = ("original", "geglu")


def unsupported(cfg):
    """The config keys this reference does not implement, as messages."""
    out = []
    if cfg.get("model_type") != "bert" or cfg.get("position_embedding_type") != "alibi":
        out.append(f"model_type {cfg.get('model_type')!r} with position_embedding_type "
                   f"{cfg.get('position_embedding_type')!r} (only bert with alibi)")
    ff = cfg.get("feed_forward_type", "original")
    if ff not in FEED_FORWARD:
        out.append(f"feed_forward_type {ff!r} (only {', '.join(FEED_FORWARD)})")
    if ff == "original" and cfg.get("hidden_act", "gelu") not in ACTIVATIONS:
        out.append(f"hidden_act {cfg.get('hidden_act')!r}")
    if any("qk-post-norm" in str(v) for v in (cfg.get("auto_map") or {}).values()):
        out.append("jina-bert-v2-qk-post-norm (q/k LayerNorms, up_gated_layer / down_layer)")
    if cfg["hidden_size"] % cfg["num_attention_heads"]:
        out.append(f"hidden_size {cfg['hidden_size']} not a multiple of num_attention_heads "
                   f"{cfg['num_attention_heads']}")
    return out


def alibi_slopes(heads):
    """ALiBi's per-head slopes (the paper's geometric series; for a head count that is
    not a power of two, the nearest lower power's series, then every other slope of
    twice that power's)."""
    def geometric(n):  # 2^(-8/n), 2^(-16/n), ..., 2^(-8)
        return [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]

    lower = 2 ** int(math.floor(math.log2(heads)))
    if lower == heads:
        return geometric(heads)
    return geometric(lower) + alibi_slopes(2 * lower)[0::2][:heads - lower]


class JinaBertEncoder(Checkpoint):
    def __init__(self, model_dir, alibi=True):
        """alibi: False zeroes the slopes (a test-only check that ALiBi matters)."""
        cfg = self.read_config(model_dir, "bert", "jina_bert_reference", unsupported)
        self.heads = cfg["num_attention_heads"]
        self.head_dim = cfg["hidden_size"] // self.heads
        self.layers = cfg["num_hidden_layers"]
        self.intermediate = cfg["intermediate_size"]
        self.eps = cfg.get("layer_norm_eps", 1e-12)
        self.geglu = cfg.get("feed_forward_type", "original") == "geglu"
        self.act = ACTIVATIONS[cfg.get("hidden_act", "gelu")] if not self.geglu else gelu_erf
        self.type_vocab = cfg.get("type_vocab_size", 2)
        self.slopes = torch.tensor(alibi_slopes(self.heads), dtype=DTYPE)
        if not alibi:
            self.slopes = torch.zeros_like(self.slopes)

        self.load_weights(model_dir, "bert.")  # a *For* head's body is under it

    def alibi_bias(self, seq):
        """[heads, seq, seq]: -slope[h] * |i - j|."""
        pos = torch.arange(seq, dtype=DTYPE)
        distance = torch.abs(pos[:, None] - pos[None, :])
        return -self.slopes[:, None, None] * distance[None, :, :]

    def attention(self, x, L, bias):
        seq = x.shape[0]

        def heads(name):  # [seq, hidden] -> [heads, seq, head_dim]
            return self.dense(x, L + name).reshape(seq, self.heads, self.head_dim).transpose(0, 1)

        q = heads("attention.self.query")
        k = heads("attention.self.key")
        v = heads("attention.self.value")
        scores = q @ k.transpose(1, 2) / math.sqrt(self.head_dim) + bias   # [heads, seq, seq]
        context = attend(scores, v)
        return self.dense(context, L + "attention.output.dense")

    def feed_forward(self, h, L):
        if self.geglu:
            u = h @ self.p(L + "mlp.gated_layers.weight").T                    # [seq, 2I], no bias
            gated, linear_half = u[:, :self.intermediate], u[:, self.intermediate:]
            y = self.dense(self.act(gated) * linear_half, L + "mlp.wo")
            return self.norm(h + y, L + "mlp.layernorm")
        inner = self.act(self.dense(h, L + "intermediate.dense"))
        return self.norm(h + self.dense(inner, L + "output.dense"), L + "output.LayerNorm")

    def hidden_states(self, ids, type_ids=None):
        """[seq, hidden] output of the last layer."""
        ids = torch.tensor(ids, dtype=torch.long)
        type_ids = torch.zeros_like(ids) if type_ids is None else torch.tensor(type_ids, dtype=torch.long)
        if len(ids) != len(type_ids):
            raise ValueError("ids and type_ids differ in length")
        x = self.p("embeddings.word_embeddings.weight")[ids]
        if self.type_vocab > 0:
            x = x + self.p("embeddings.token_type_embeddings.weight")[type_ids]
        x = self.norm(x, "embeddings.LayerNorm")
        bias = self.alibi_bias(len(ids))
        for n in range(self.layers):
            L = f"encoder.layer.{n}."
            h = self.norm(x + self.attention(x, L, bias), L + "attention.output.LayerNorm")
            x = self.feed_forward(h, L)
        return x

    def classify(self, first):
        """The sequence classifier's logits from the first token's last state."""
        pooled = torch.tanh(self.dense(first, "pooler.dense"))
        return self.dense(pooled, "classifier", prefixed=False)
