"""Merges a Hugging Face PEFT LoRA adapter into a reference's base weights.

An adapter directory holds adapter_config.json and adapter_model.safetensors, as
PEFT's save_pretrained writes them. Tensor keys are "base_model.model." + the
module's path in the base checkpoint + ".lora_A.weight" ([r, in_features]) or
".lora_B.weight" ([out_features, r]); keys without the "base_model.model." prefix
(as transformers' own PEFT integration saves them) are accepted too. Every other
key must be a parameter of a module named in modules_to_save (saved whole, e.g.
"base_model.model.classifier.weight") and replaces the base tensor of the same
path and shape.

Merged: W + scaling * (B @ A) in float64, cast back to the base tensor's dtype;
scaling = lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora; r and
lora_alpha per module from rank_pattern / alpha_pattern when a key matches (as
PEFT: the module path matches "(.*\\.)?KEY$"). A target name matches a module whose
path equals it or ends with "." + it; a string target_modules is a regex the
whole path must match.

Strict, to catch adapters the runtime must also refuse: peft_type other than
LORA, use_dora, bias other than "none", lora_bias, fan_in_fan_out,
layers_to_transform, exclude_modules, target_modules "all-linear", a target that
matches no module or a module that is not a Linear (2-D weight, not an
embedding), a targeted module without its lora_A / lora_B pair, a pair for a
module that is not targeted, shapes that do not fit the base weight or the
configured rank, and any other tensor raise AdapterError.
"""
import json
import math
import os
import re

import numpy as np
import torch

from safetensors_io import read_tensors

PREFIX = "base_model.model."
CONFIG = "adapter_config.json"
WEIGHTS = "adapter_model.safetensors"


class AdapterError(ValueError):
    pass


def read_config(adapter_dir):
    path = os.path.join(adapter_dir, CONFIG)
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except OSError as e:
        raise AdapterError(f"{path}: {e.strerror}") from None
    except ValueError as e:
        raise AdapterError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(cfg, dict):
        raise AdapterError(f"{path}: not a JSON object")

    def refuse(why):
        raise AdapterError(f"{path}: {why} not supported")

    if cfg.get("peft_type") != "LORA":
        refuse(f"peft_type {cfg.get('peft_type')!r}")
    if cfg.get("use_dora"):
        refuse("use_dora")
    if cfg.get("bias", "none") != "none":
        refuse(f"bias {cfg['bias']!r}")
    if cfg.get("lora_bias"):
        refuse("lora_bias")
    if cfg.get("fan_in_fan_out"):
        refuse("fan_in_fan_out")
    if cfg.get("layers_to_transform") is not None:
        refuse("layers_to_transform")
    if cfg.get("exclude_modules"):
        refuse("exclude_modules")
    r, alpha = cfg.get("r"), cfg.get("lora_alpha")
    if not isinstance(r, int) or isinstance(r, bool) or r <= 0:
        refuse(f"r {r!r}")
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool):
        refuse(f"lora_alpha {alpha!r}")
    targets = cfg.get("target_modules")
    if targets == "all-linear":
        refuse("target_modules 'all-linear'")
    if not (isinstance(targets, str) or (isinstance(targets, list) and targets
                                         and all(isinstance(t, str) for t in targets))):
        refuse(f"target_modules {targets!r}")
    saved = cfg.get("modules_to_save") or []
    if not isinstance(saved, list) or not all(isinstance(m, str) for m in saved):
        refuse(f"modules_to_save {saved!r}")
    for key in ("rank_pattern", "alpha_pattern"):
        if not isinstance(cfg.get(key) or {}, dict):
            refuse(f"{key} {cfg[key]!r}")
    return cfg


def targeted(cfg, path):
    targets = cfg["target_modules"]
    if isinstance(targets, str):
        return re.fullmatch(targets, path) is not None
    return any(path == t or path.endswith("." + t) for t in targets)


def pattern_value(pattern, path, default):
    for key, value in (pattern or {}).items():
        if re.match(rf"(.*\.)?{key}$", path):
            return value
    return default


def is_linear(name, tensor):
    """A Linear's weight: 2-D and not an embedding table (nn.Embedding)."""
    return (tensor.dim() == 2 and "embeddings." not in name
            and not name.endswith("embed_tokens.weight"))


def merge(base, adapter_dir):
    """A new {name: tensor} dict: `base` (torch tensors keyed by checkpoint name) with
    the adapter merged in; `base` itself is not modified."""
    cfg = read_config(adapter_dir)
    path = os.path.join(adapter_dir, WEIGHTS)
    if not os.path.exists(path):
        raise AdapterError(f"{adapter_dir}: no {WEIGHTS}")
    try:
        raw = read_tensors(path, dtype=np.float64)
    except (OSError, ValueError, KeyError) as e:
        raise AdapterError(f"{path}: {e}") from None

    lora, whole = {}, {}  # module path -> {"A": t, "B": t}; base tensor name -> t
    for key, value in raw.items():
        name = key[len(PREFIX):] if key.startswith(PREFIX) else key
        m = re.fullmatch(r"(.+)\.lora_([AB])\.weight", name)
        if m:
            lora.setdefault(m.group(1), {})[m.group(2)] = torch.from_numpy(value)
        else:
            whole[name] = torch.from_numpy(value)

    modules = {n[:-len(".weight")] for n in base if n.endswith(".weight")}
    prefixes = {".".join(n.split(".")[:i]) for n in base for i in range(1, n.count(".") + 1)}
    hits = sorted(p for p in prefixes if targeted(cfg, p))
    if not hits:
        raise AdapterError(f"{adapter_dir}: target_modules {cfg['target_modules']!r} match no "
                           "module of the base model")
    for p in hits:
        if p not in modules or not is_linear(p + ".weight", base[p + ".weight"]):
            raise AdapterError(f"{adapter_dir}: targeted module {p} is not a Linear layer")
        if set(lora.get(p, {})) != {"A", "B"}:
            raise AdapterError(f"{adapter_dir}: targeted module {p} has no lora_A / lora_B pair")
    extra = sorted(set(lora) - set(hits))
    if extra:
        raise AdapterError(f"{adapter_dir}: LoRA tensors for {extra[0]}, which target_modules "
                           "does not name")

    out = dict(base)
    for p in hits:
        w = base[p + ".weight"]
        a, b = lora[p]["A"], lora[p]["B"]
        r = pattern_value(cfg.get("rank_pattern"), p, cfg["r"])
        alpha = pattern_value(cfg.get("alpha_pattern"), p, cfg["lora_alpha"])
        n_out, n_in = w.shape
        if tuple(a.shape) != (r, n_in) or tuple(b.shape) != (n_out, r):
            raise AdapterError(f"{adapter_dir}: {p}: lora_A {list(a.shape)} / lora_B "
                               f"{list(b.shape)} do not fit weight {[n_out, n_in]} at rank {r}")
        scaling = alpha / (math.sqrt(r) if cfg.get("use_rslora") else r)
        out[p + ".weight"] = (w.to(torch.float64) + scaling * (b @ a)).to(w.dtype)

    saved = cfg.get("modules_to_save") or []
    for name, value in sorted(whole.items()):
        module = name.rsplit(".", 1)[0]
        if not any(module == s or module.endswith("." + s) or module.startswith(s + ".")
                   or ("." + s + ".") in module for s in saved):
            raise AdapterError(f"{adapter_dir}: unexpected tensor {name} (not LoRA, not in "
                               "modules_to_save)")
        if name not in base or tuple(base[name].shape) != tuple(value.shape):
            raise AdapterError(f"{adapter_dir}: modules_to_save tensor {name} "
                               f"{list(value.shape)} has no base tensor of that shape")
        out[name] = value.to(base[name].dtype)
    return out


class Adapters:
    """Merged weights per adapter directory, computed once each."""

    def __init__(self, base):
        self.base = base
        self.cache = {}

    def weights(self, adapter_dir):
        if not adapter_dir:
            return self.base
        key = os.path.realpath(adapter_dir)
        if key not in self.cache:
            self.cache[key] = merge(self.base, adapter_dir)
        return self.cache[key]
