#!/usr/bin/python3
"""Reference decoder-only generator (Llama / Qwen2 / Qwen3) for Shoal's native runtime tests.

usage:
  decoder_reference.py forward MODEL_DIR --input IN.json --output OUT.json [--lora DIR]
  decoder_reference.py bench MODEL_DIR --concurrency C --prompt-tokens P --new-tokens T
                       [--warmup N (1)] [--threads N (2)] [--seed S (0)] [--lora DIR]
  decoder_reference.py selfcheck MODEL_DIR [MODEL_DIR ...] [--lora DIR]
  decoder_reference.py embed MODEL_DIR IN.json OUT.json [--attention causal|bidirectional]

forward (float64): IN.json is {"prompts": [[token ids], ...], "new_tokens": N}, where a
  prompt may also be {"ids": [token ids], "lora": "ADAPTER_DIR"} (see LoRA); OUT.json is
  {"logits": [[[vocab_size floats] per prompt position] per prompt],
   "greedy": [[N ids] per prompt],
   "min_margin": the smallest top1 - top2 logit gap met while decoding greedily}.
  Greedy decoding prefills the prompt into a KV cache, then feeds one token at a
  time; before writing, every decoding step's logits are checked against a full
  recompute of the sequence without a cache (max |diff| <= 1e-10, else exit 1).
bench (float32): C random prompts of P ids (seeded) in one static batch, T greedy
  tokens each through the same KV-cache loop; prints progress on stderr and one
  JSON line on stdout: {"concurrency", "tokens_per_s" (all C*T generated tokens
  over the whole run), "ttft_ms" (the prefill, which yields the first token),
  "itl_ms" (mean decode step), "seconds"}. --threads: OpenBLAS threads for the
  matmuls; torch's own thread pool stays at one (see below).
embed (float64): a decoder embedder (Qwen3-Embedding, gte-Qwen2: sentence-transformers
  files with a Pooling module). IN.json is {"inputs": [[token ids] or {"ids": [...]}, ...]};
  OUT.json is {"outputs": [[hidden_size floats], ...]}: the final norm of each input's
  positions pooled as the Pooling module says (last token, mean or first), L2-normalized
  when modules.json has a Normalize module. Attention is bidirectional when config.json
  says is_causal false or use_bidirectional_attention true, else causal; --attention
  overrides it. The checkpoint may be the bare model (no "model." prefix, no lm_head).
selfcheck (float64): on seeded prompts, the cached paths (one-pass and chunked
  prefill, then single tokens) against full recompute; prints the largest
  difference and the smallest greedy margin per model, exits 1 above 1e-10.

LoRA: --lora DIR merges a PEFT LoRA adapter directory (adapter_config.json,
adapter_model.safetensors) into the weights before running (peft_lora.py: W +
scaling * B @ A in float64, then the run's dtype; modules_to_save tensors replace
the base's); with several MODEL_DIRs (selfcheck), into each. In forward, a prompt's
own "lora" wins over --lora ("lora": null or "" runs the base model), so one
IN.json can mix adapters; each adapter is merged once. An adapter that cannot be
merged exactly (see peft_lora.py) exits 1 with a message.

Written as plain torch tensor operations from the architectures' definitions (no
transformers, no nn modules, no fused attention), on weights read by our own
safetensors reader: RMSNorm; RoPE in the rotate-half layout of Hugging Face's
Llama with inv_freq = 1 / theta^(2i/d), "linear" and "llama3" scaling as
transformers defines them; grouped-query attention, causal unless the config says
bidirectional; SwiGLU MLP
down(silu(gate(x)) * up(x)); Qwen2's q/k/v biases; Qwen3's per-head q_norm /
k_norm before RoPE; tied or untied lm_head.
"""
import argparse
import json
import math
import os
import sys
import time

# Debian's torch runs its matmuls on OpenBLAS, which sizes its thread pool once, from
# OPENBLAS_NUM_THREADS, when torch loads it. torch's own intra-op threads (the
# elementwise ops) on top of it oversubscribe the cores: with 2 of each on 2 cores
# the bench ran 2-3x slower (the project's notes/toolchain.md says the same). So
# --threads sizes OpenBLAS, here before the import, and main keeps torch to one thread.
_threads = argparse.ArgumentParser(add_help=False)
_threads.add_argument("--threads", type=int, default=2)
THREADS = _threads.parse_known_args()[0].threads
os.environ["OPENBLAS_NUM_THREADS"] = str(THREADS)

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peft_lora import AdapterError, Adapters  # noqa: E402
from safetensors_io import read_model_dir  # noqa: E402

FAMILIES = ("llama", "qwen2", "qwen3")
RECOMPUTE_TOLERANCE = 1e-10  # float64: cached and uncached paths differ only by rounding


def rms_norm(x, weight, eps):
    """Over the last axis: x / sqrt(mean(x^2) + eps) * weight."""
    return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * weight


def silu(x):
    return x * torch.sigmoid(x)


def rope_inv_freq(cfg, head_dim):
    """Rotary frequencies 1 / theta^(2i/d), i < d/2, with the config's scaling."""
    theta = cfg.get("rope_theta", 10000.0)
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    scaling = cfg.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))  # old configs say "type"
    if kind == "default":
        return inv_freq
    if kind == "linear":  # positions divided by the factor: the same as frequencies
        return inv_freq / scaling["factor"]
    if kind == "llama3":
        # Wavelengths longer than the original context are stretched by the factor,
        # those shorter than original / high_freq_factor kept, and the band between
        # blended linearly in original / wavelength.
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        original = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > original / low, inv_freq / factor, inv_freq)
        smooth = (original / wavelen - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= original / high) & (wavelen <= original / low)
        return torch.where(medium, blended, scaled)
    raise ValueError(f"rope scaling {kind!r} not handled")


def rotate_half(x):
    """(x1, x2) -> (-x2, x1) on the two halves of the last axis (Hugging Face's layout:
    dimension i pairs with i + d/2, not with its neighbour)."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class KVCache:
    """Keys and values of every layer, [layers, batch, kv_heads, capacity, head_dim],
    valid up to `length` positions."""

    def __init__(self, model, batch, capacity):
        shape = (model.layers, batch, model.kv_heads, capacity, model.head_dim)
        self.k = torch.zeros(shape, dtype=model.dtype)
        self.v = torch.zeros(shape, dtype=model.dtype)
        self.length = 0


class Decoder:
    def __init__(self, model_dir, dtype):
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        self.family = cfg["model_type"]
        if self.family not in FAMILIES:
            raise ValueError(f"model_type {self.family!r} not handled")
        if cfg.get("hidden_act", "silu") != "silu":
            raise ValueError(f"hidden_act {cfg['hidden_act']!r} not handled")
        self.dtype = dtype
        self.layers = cfg["num_hidden_layers"]
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = cfg.get("num_key_value_heads", self.heads)
        self.head_dim = cfg.get("head_dim") or cfg["hidden_size"] // self.heads
        self.eps = cfg["rms_norm_eps"]
        self.vocab_size = cfg["vocab_size"]
        self.max_positions = cfg["max_position_embeddings"]
        self.qkv_bias = self.family == "qwen2" or cfg.get("attention_bias", False)
        self.qk_norm = self.family == "qwen3"
        # Embedders trained with every position seeing the whole sequence say so in
        # either of two keys (gte-Qwen2: is_causal false; voyage: use_bidirectional_attention).
        self.bidirectional = cfg.get("is_causal") is False or cfg.get("use_bidirectional_attention") is True
        tied = cfg.get("tie_word_embeddings", False)  # the default of all three configs
        self.tied = tied

        np_dtype = np.float64 if dtype == torch.float64 else np.float32
        w = {k: torch.from_numpy(v) for k, v in read_model_dir(model_dir, np_dtype).items()}
        if "embed_tokens.weight" in w:  # a bare model (an embedder's save): this class's names
            w = {"model." + k: v for k, v in w.items()}
            tied = self.tied = True  # no head of its own; embed never uses one
        expected = set(self.tensor_names(tied))
        if set(w) != expected:
            raise ValueError(f"{model_dir}: tensors missing {sorted(expected - set(w))[:4]}, "
                             f"unexpected {sorted(set(w) - expected)[:4]}")
        self.use_weights(w)
        if self.lm_head.shape[0] != self.vocab_size:
            raise ValueError(f"{model_dir}: vocab_size {self.vocab_size}, "
                             f"lm_head rows {self.lm_head.shape[0]}")
        self.inv_freq = rope_inv_freq(cfg, self.head_dim)  # float64, cast after cos/sin

    def use_weights(self, w):
        """Runs on the tensors `w` from now on (the checkpoint's, or a LoRA's merge)."""
        self.w = w
        self.lm_head = w["model.embed_tokens.weight" if self.tied else "lm_head.weight"]

    def tensor_names(self, tied):
        names = ["model.embed_tokens.weight", "model.norm.weight"]
        if not tied:
            names.append("lm_head.weight")
        for i in range(self.layers):
            L = f"model.layers.{i}."
            names += [L + "input_layernorm.weight", L + "post_attention_layernorm.weight"]
            names += [L + f"self_attn.{p}_proj.weight" for p in "qkvo"]
            names += [L + f"mlp.{p}_proj.weight" for p in ("gate", "up", "down")]
            if self.qkv_bias:
                names += [L + f"self_attn.{p}_proj.bias" for p in "qkv"]
            if self.qk_norm:
                names += [L + "self_attn.q_norm.weight", L + "self_attn.k_norm.weight"]
        return names

    def new_cache(self, batch, capacity):
        return KVCache(self, batch, capacity)

    def rope(self, x, cos, sin):
        return x * cos + rotate_half(x) * sin

    def attention(self, i, x, cache, cos, sin):
        """Layer i's self-attention of the new positions x [B, S, hidden], whose keys
        and values are appended to the cache; returns [B, S, hidden]."""
        w, L = self.w, f"model.layers.{i}.self_attn."
        B, S, _ = x.shape
        start = cache.length

        def project(name, heads):
            y = x @ w[L + name + ".weight"].T
            if self.qkv_bias:
                y = y + w[L + name + ".bias"]
            return y.view(B, S, heads, self.head_dim)

        q, k, v = project("q_proj", self.heads), project("k_proj", self.kv_heads), \
            project("v_proj", self.kv_heads)
        if self.qk_norm:  # Qwen3: RMSNorm of each head's vector, before RoPE
            q = rms_norm(q, w[L + "q_norm.weight"], self.eps)
            k = rms_norm(k, w[L + "k_norm.weight"], self.eps)
        q = self.rope(q.transpose(1, 2), cos, sin)  # [B, heads, S, d]
        k = self.rope(k.transpose(1, 2), cos, sin)
        cache.k[i, :, :, start:start + S] = k
        cache.v[i, :, :, start:start + S] = v.transpose(1, 2)
        keys = cache.k[i, :, :, :start + S]
        values = cache.v[i, :, :, :start + S]
        # Grouped-query attention: query head h reads KV head h // (heads / kv_heads).
        group = self.heads // self.kv_heads
        keys = keys.repeat_interleave(group, dim=1)
        values = values.repeat_interleave(group, dim=1)
        scores = q @ keys.transpose(-1, -2) / math.sqrt(self.head_dim)  # [B, heads, S, T]
        if not self.bidirectional:
            # Causal: the query at absolute position start + s sees keys at positions <= it.
            future = (torch.arange(start + S)[None, :] > (start + torch.arange(S))[:, None])
            scores = scores.masked_fill(future, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ values  # [B, heads, S, d]
        out = out.transpose(1, 2).reshape(B, S, self.heads * self.head_dim)
        return out @ w[L + "o_proj.weight"].T

    def mlp(self, i, x):
        w, L = self.w, f"model.layers.{i}.mlp."
        gate = x @ w[L + "gate_proj.weight"].T
        up = x @ w[L + "up_proj.weight"].T
        return (silu(gate) * up) @ w[L + "down_proj.weight"].T

    def pooled_hidden(self, ids, pooling):
        """ids [S] run from position 0; the final norm of every position (the model's
        last_hidden_state), pooled as sentence-transformers' Pooling module does."""
        x = self.hidden(torch.tensor([ids]), self.new_cache(1, len(ids)))
        h = rms_norm(x[0], self.w["model.norm.weight"], self.eps)
        return {"cls": lambda: h[0], "mean": lambda: h.mean(dim=0), "lasttoken": lambda: h[-1]}[pooling]()

    def hidden(self, ids, cache):
        """Runs ids [B, S] at positions cache.length.. through every layer, appending
        them to the cache; returns the residual stream [B, S, hidden] (before the
        final norm)."""
        B, S = ids.shape
        start = cache.length
        if start + S > min(cache.k.shape[3], self.max_positions):
            raise ValueError(f"position {start + S} past the cache or the model's limit")
        angles = torch.arange(start, start + S, dtype=torch.float64)[:, None] * self.inv_freq
        angles = torch.cat((angles, angles), dim=-1)  # [S, d]: frequency i at i and i + d/2
        cos, sin = angles.cos().to(self.dtype), angles.sin().to(self.dtype)
        x = self.w["model.embed_tokens.weight"][ids]
        for i in range(self.layers):
            L = f"model.layers.{i}."
            x = x + self.attention(i, rms_norm(x, self.w[L + "input_layernorm.weight"], self.eps),
                                   cache, cos, sin)
            x = x + self.mlp(i, rms_norm(x, self.w[L + "post_attention_layernorm.weight"],
                                         self.eps))
        cache.length += S
        return x

    def forward(self, ids, cache, all_logits=True):
        """Runs ids [B, S] at positions cache.length.. and appends them to the cache.
        Returns logits [B, S, vocab] (all_logits) or [B, vocab] for the last position."""
        x = self.hidden(ids, cache)
        if not all_logits:
            x = x[:, -1]
        return rms_norm(x, self.w["model.norm.weight"], self.eps) @ self.lm_head.T


def margin(logits):
    """top1 - top2 of a logits vector: how close greedy decoding came to a tie."""
    top = torch.topk(logits, 2).values
    return (top[0] - top[1]).item()


def greedy(model, prompt, new_tokens, prefill_chunks=1):
    """Greedy decoding of one prompt (a list of ids) through the KV cache: the
    prompt in `prefill_chunks` passes, then one token per step. Returns the prompt
    logits [P, vocab], the generated ids, and each generated token's logits."""
    cache = model.new_cache(1, len(prompt) + new_tokens)
    ids = torch.tensor([prompt])
    prompt_logits = torch.cat([model.forward(chunk, cache)[0]
                               for chunk in ids.tensor_split(prefill_chunks, dim=1)])
    step_logits = [prompt_logits[-1]]
    tokens = []
    for _ in range(new_tokens):
        tokens.append(int(step_logits[-1].argmax()))
        if len(tokens) < new_tokens:
            step_logits.append(model.forward(torch.tensor([[tokens[-1]]]), cache)[0, -1])
    return prompt_logits, tokens, step_logits


def recompute_error(model, prompt, tokens, prompt_logits, step_logits):
    """Largest |difference| between the cached logits and one uncached pass over
    prompt + tokens[:-1] (whose last len(tokens) rows predict the same tokens)."""
    sequence = prompt + tokens[:-1]
    full = model.forward(torch.tensor([sequence]), model.new_cache(1, len(sequence)))[0]
    cached = torch.cat((prompt_logits[:-1], torch.stack(step_logits)))
    return (full - cached).abs().max().item()


def check_ids(model, prompts):
    for p in prompts:
        if not p or not all(isinstance(t, int) and 0 <= t < model.vocab_size for t in p):
            raise ValueError(f"a prompt must be a non-empty list of ids < {model.vocab_size}")


def with_lora(model, lora):
    """Merges the adapter directory `lora` (if any) into the model's weights."""
    if lora:
        model.use_weights(Adapters(model.w).weights(lora))
    return model


def cmd_forward(args):
    with open(args.input) as f:
        request = json.load(f)
    model = Decoder(args.model_dir, torch.float64)
    n = request["new_tokens"]
    # A prompt is a list of ids, or {"ids": [...], "lora": ADAPTER_DIR or null}.
    items = [p if isinstance(p, dict) else {"ids": p} for p in request["prompts"]]
    prompts = [item["ids"] for item in items]
    check_ids(model, prompts)
    adapters = Adapters(model.w)
    out = {"logits": [], "greedy": [], "min_margin": math.inf}
    with torch.no_grad():
        for item, prompt in zip(items, prompts):
            model.use_weights(adapters.weights(item["lora"] if "lora" in item else args.lora))
            prompt_logits, tokens, step_logits = greedy(model, prompt, n)
            error = recompute_error(model, prompt, tokens, prompt_logits, step_logits)
            if error > RECOMPUTE_TOLERANCE:
                print(f"decoder_reference: cached and recomputed logits differ by {error:.3g}",
                      file=sys.stderr)
                return 1
            out["logits"].append(prompt_logits.tolist())
            out["greedy"].append(tokens)
            out["min_margin"] = min([out["min_margin"]] + [margin(s) for s in step_logits])
    with open(args.output, "w") as f:
        json.dump(out, f)
    return 0


def tokenizer_size(model_dir):
    """Ids the model's tokenizer can produce: its BPE vocabulary and added tokens."""
    with open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    ids = list(tok["model"]["vocab"].values()) + [t["id"] for t in tok["added_tokens"]]
    return max(ids) + 1


def cmd_selfcheck(args):
    failed = False
    with torch.no_grad():
        for model_dir in args.model_dirs:
            model = with_lora(Decoder(model_dir, torch.float64), args.lora)
            rng = np.random.default_rng(7)
            n_ids = tokenizer_size(model_dir)
            prompts = [rng.integers(0, n_ids, size=n).tolist() for n in (1, 6, 23)]
            worst, smallest = 0.0, math.inf
            for prompt in prompts:
                for chunks in (1, 3):  # one-pass prefill, and chunks after a cached prefix
                    logits, tokens, steps = greedy(model, prompt, 16, min(chunks, len(prompt)))
                    worst = max(worst, recompute_error(model, prompt, tokens, logits, steps))
                    smallest = min([smallest] + [margin(s) for s in steps])
            ok = worst <= RECOMPUTE_TOLERANCE
            failed |= not ok
            print(f"{os.path.basename(os.path.normpath(model_dir))}: cached vs recompute max "
                  f"|diff| {worst:.3g} ({'ok' if ok else 'FAIL'}), min greedy margin "
                  f"{smallest:.4f}")
    return 1 if failed else 0


def cmd_bench(args):
    model = with_lora(Decoder(args.model_dir, torch.float32), args.lora)
    C, P, T = args.concurrency, args.prompt_tokens, args.new_tokens
    prompts = torch.randint(0, model.vocab_size, (C, P),
                            generator=torch.Generator().manual_seed(args.seed))

    def run(label):
        cache = model.new_cache(C, P + T)
        begin = time.perf_counter()
        token = model.forward(prompts, cache, all_logits=False).argmax(-1)  # the prefill
        first = time.perf_counter()
        print(f"{label}: prefill {C}x{P} tokens {1e3 * (first - begin):.1f} ms", file=sys.stderr,
              flush=True)
        for step in range(1, T):
            token = model.forward(token[:, None], cache, all_logits=False).argmax(-1)
            if step % 8 == 0:
                print(f"{label}: {step + 1}/{T} tokens", file=sys.stderr, flush=True)
        end = time.perf_counter()
        return first - begin, end - first, end - begin

    with torch.no_grad():
        for n in range(args.warmup):
            run(f"warmup {n + 1}/{args.warmup}")
        prefill, decode, total = run("run")
    print(json.dumps({"concurrency": C, "tokens_per_s": C * T / total, "ttft_ms": 1e3 * prefill,
                      "itl_ms": 1e3 * decode / max(T - 1, 1), "seconds": total}), flush=True)
    return 0


def pooling_mode(model_dir):
    """The mode of the directory's sentence-transformers Pooling module."""
    with open(os.path.join(model_dir, "modules.json")) as f:
        modules = json.load(f)
    path = next(m["path"] for m in modules if m["type"].endswith("Pooling"))
    with open(os.path.join(model_dir, path, "config.json")) as f:
        pc = json.load(f)
    modes = [mode for mode in ("cls_token", "mean_tokens", "lasttoken") if pc.get("pooling_mode_" + mode)]
    if len(modes) != 1:
        raise ValueError(f"pooling config {pc} not handled (exactly one of cls/mean/lasttoken)")
    return {"cls_token": "cls", "mean_tokens": "mean", "lasttoken": "lasttoken"}[modes[0]]


def cmd_embed(args):
    model = Decoder(args.model_dir, torch.float64)
    if args.attention:
        model.bidirectional = args.attention == "bidirectional"
    pooling = pooling_mode(args.model_dir)
    with open(os.path.join(args.model_dir, "modules.json")) as f:
        normalize = any(m["type"].endswith("Normalize") for m in json.load(f))
    with open(args.input) as f:
        inputs = json.load(f)["inputs"]
    outputs = []
    with torch.no_grad():
        for item in inputs:  # [ids], or {"ids": [ids]} as bert_reference.py takes them
            v = model.pooled_hidden(item["ids"] if isinstance(item, dict) else item, pooling)
            if normalize:
                v = v / torch.clamp(torch.sqrt((v * v).sum()), min=1e-12)
            outputs.append([float(x) for x in v])
    with open(args.output, "w") as f:
        json.dump({"outputs": outputs}, f)
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("forward", help="logits and greedy continuations, float64")
    p.add_argument("model_dir")
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--lora", help="PEFT LoRA adapter directory, merged into the weights")
    p = sub.add_parser("bench", help="the reference's own generate loop, float32")
    p.add_argument("model_dir")
    p.add_argument("--concurrency", type=int, required=True)
    p.add_argument("--prompt-tokens", type=int, required=True)
    p.add_argument("--new-tokens", type=int, required=True)
    p.add_argument("--warmup", type=int, default=1, help="untimed runs first (default 1)")
    p.add_argument("--threads", type=int, default=2,
                   help="OpenBLAS threads for the matmuls (default 2)")
    p.add_argument("--seed", type=int, default=0, help="of the random prompts")
    p.add_argument("--lora", help="PEFT LoRA adapter directory, merged into the weights")
    p = sub.add_parser("embed", help="a decoder embedder's pooled vectors, float64")
    p.add_argument("model_dir")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--attention", choices=("causal", "bidirectional"),
                   help="over what config.json says (a profile's native.attention)")
    p = sub.add_parser("selfcheck", help="cached vs recomputed logits, float64")
    p.add_argument("model_dirs", nargs="+")
    p.add_argument("--lora", help="PEFT LoRA adapter directory, merged into the weights")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    try:
        return {"forward": cmd_forward, "bench": cmd_bench, "selfcheck": cmd_selfcheck, "embed": cmd_embed}[
            args.command](args)
    except AdapterError as e:
        print(f"decoder_reference: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
