#!/usr/bin/python3
"""Shoal's PyTorch runtime: a sidecar that runs TorchScript encoders and cross-encoders,
and Hugging Face directories through transformers where it can import it.

It speaks the runtime protocol (docs/runtime-protocol.md, version 1) in its
"tokens" input mode: Shoal tokenizes and sends token ids; this process pads them
into one batch, runs the module under torch.inference_mode and pools /
L2-normalizes the embeddings. The module is a TorchScript file (torch.jit.load)
or, in a directory without one, a transformers model from its config.json and
weights (the base class it names, or AutoModel, to encode;
AutoModelForSequenceClassification to score):
registration sends here the checkpoints whose model_type the native runtime
does not run. On the CPU by default, or a CUDA device (option device);
transformers' modules in float32 or another dtype (option dtype). Tasks
encode and score; no LoRA, no tokenize.

Started by the worker with its end of a socket pair as fd 3 (SHOAL_RUNTIME_FD=3),
or as `runtime.py --listen PATH` to serve each connection to a Unix socket path.

Threads: a connection's reader thread answers hello, health, memory, unload,
loras and stop inline (so health is answered while batches run); a
ThreadPoolExecutor runs load, encode and score (torch releases the GIL in its
ops). One lock per connection around socket writes: a frame goes out whole.

Runs under Debian's /usr/bin/python3: stdlib, torch, numpy, msgpack (and
transformers, where installed).
"""
import importlib.util
import inspect
import json
import os
import re
import socket
import struct
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import msgpack
import numpy as np
import torch

NAME = "pytorch"
MAX_FRAME = 256 << 20
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
DEFAULT_FILES = ("model.pt", "model.torchscript", "traced_model.pt")
OPTIONS = ("file", "pooling", "device", "dtype")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
ROBERTA_TYPES = ("roberta", "xlm-roberta", "camembert")


class Failure(Exception):
    """A request's error reply: a protocol code and a message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def log(line):
    print(f"{NAME}: {line}", file=sys.stderr, flush=True)


def short(e):
    """An engine exception as one line: TorchScript's ends with the error it re-raised."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    return lines[-1].replace("builtins.", "", 1) if lines else type(e).__name__


def read_json(path, default=None):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return default
    except (OSError, ValueError) as e:
        raise Failure("MODEL_LOAD_FAILED", f"{path}: {e}")


def pooling_from_files(path):
    """cls / mean from modules.json's Pooling module's config (cls without one)."""
    modules = read_json(os.path.join(path, "modules.json"), [])
    modules = modules if isinstance(modules, list) else []
    pool_dir = next((m.get("path", "") for m in modules if isinstance(m, dict)
                     and str(m.get("type", "")).endswith(".Pooling")), None)
    if pool_dir is None:
        return "cls"
    cfg = read_json(os.path.join(path, pool_dir, "config.json"), {})
    if cfg.get("pooling_mode_cls_token"):
        return "cls"
    if cfg.get("pooling_mode_mean_tokens"):
        return "mean"
    if not any(v for k, v in cfg.items() if k.startswith("pooling_mode_")):
        return "cls"
    raise Failure("INVALID_INPUT", f"{os.path.join(path, pool_dir, 'config.json')}: pooling "
                  "mode not supported (runtime pytorch pools cls or mean)")


class Model:
    """One loaded module (TorchScript, or transformers') and what its batches need."""

    def __init__(self, request):
        cfg = request.get("config")
        if not isinstance(cfg, dict) or not isinstance(cfg.get("path"), str):
            raise Failure("INVALID_INPUT", "load: config.path missing")
        self.id, self.task, path = str(cfg.get("id", request["model"])), cfg.get("task"), cfg["path"]
        if self.task not in ("encode", "score"):
            raise Failure("INVALID_INPUT",
                          f"runtime pytorch serves encode and score, not {self.task!r}")
        options = cfg.get("options") or {}
        if not isinstance(options, dict):
            raise Failure("INVALID_INPUT", "load: config.options is not a map")
        for key in options:
            if key not in OPTIONS:
                raise Failure("INVALID_INPUT",
                              f"unknown pytorch option '{key}' (known: {', '.join(OPTIONS)})")
        self.max_input = int(cfg.get("max_input_tokens") or 0)

        self.pooling = options.get("pooling")
        if self.pooling is not None and (self.task != "encode"
                                         or self.pooling not in ("cls", "mean")):
            raise Failure("INVALID_INPUT", f"pytorch option pooling={self.pooling!r}: "
                          "cls or mean, for encode models")
        hf = read_json(os.path.join(path, "config.json"), {})
        hf = hf if isinstance(hf, dict) else {}
        model_type = hf.get("model_type", "")
        self.pad = hf.get("pad_token_id")
        if not isinstance(self.pad, int):
            self.pad = 1 if model_type in ROBERTA_TYPES else 0
        self.vocab, self.type_vocab = hf.get("vocab_size"), hf.get("type_vocab_size")
        positions = hf.get("max_position_embeddings") or 0
        self.max_tokens = max(0, positions - (self.pad + 1)) if model_type in ROBERTA_TYPES and \
            positions else positions
        if self.task == "encode" and self.pooling is None:
            self.pooling = pooling_from_files(path)

        self.device = parse_device(options.get("device", "cpu"))
        dtype = options.get("dtype", "float32")
        self.dtype = DTYPES.get(dtype) if isinstance(dtype, str) else None
        if self.dtype is None:
            raise Failure("INVALID_INPUT", f"pytorch option dtype={options.get('dtype')!r}: "
                          f"{', '.join(DTYPES)}")
        self.file = options.get("file")
        if self.file is not None and (not isinstance(self.file, str) or not self.file):
            raise Failure("INVALID_INPUT", "pytorch option file: a file name relative to path")
        if self.file is None:
            self.file = next((f for f in DEFAULT_FILES
                              if os.path.isfile(os.path.join(path, f))), None)
        if self.file is None and hf:
            self.module, self.inputs = load_transformers(path, self.task, hf)
        elif self.file is None:
            raise Failure("MODEL_LOAD_FAILED",
                          f"{path}: no {', '.join(DEFAULT_FILES)}, nor a config.json for transformers")
        elif self.dtype != torch.float32:  # a traced graph keeps the dtypes it was traced in
            raise Failure("INVALID_INPUT", f"pytorch option dtype={dtype}: for a directory run through "
                          f"transformers; TorchScript ({self.file}) runs as it was saved")
        else:
            self.module, self.inputs = load_torchscript(os.path.join(path, self.file))
        try:
            self.module.to(device=self.device, dtype=self.dtype)
        except Exception as e:
            raise Failure("MODEL_LOAD_FAILED", f"{path}: to {self.device} in {self.dtype}: {short(e)}")
        # A frozen TorchScript graph holds its weights as constants: then its file's size.
        self.memory = sum(t.numel() * t.element_size() for t in
                          list(self.module.parameters()) + list(self.module.buffers())) or \
            (os.path.getsize(os.path.join(path, self.file)) if self.file else 0)

    def item_error(self, item, score):
        """The error of an item that fails alone, or None."""
        if not isinstance(item, dict):
            return Failure("INVALID_INPUT", "an item is not a map")
        if item.get("lora"):
            return Failure("MODEL_NOT_FOUND",
                           f"model '{self.id}' runs no LoRA adapters (runtime pytorch)")
        ids = item.get("ids")
        if not isinstance(ids, list) or not ids:
            return Failure("INVALID_INPUT", "input has no tokens")
        if self.max_input and len(ids) > self.max_input:
            return Failure("INVALID_INPUT",
                           f"input has {len(ids)} tokens, over the limit of {self.max_input}")
        types = (item.get("type_ids") or None) if score else None  # [] too: zeros
        if types is not None and (not isinstance(types, list) or len(types) != len(ids)):
            return Failure("INVALID_INPUT", "type_ids and ids differ in length")
        for name, vals, limit in (("token id", ids, self.vocab), ("type id", types or [],
                                                                   self.type_vocab)):
            bad = next((v for v in vals if type(v) is not int or v < 0
                        or (isinstance(limit, int) and v >= limit)), None)
            if bad is not None:
                return Failure("INVALID_INPUT", f"{name} {bad!r} is out of range")
        return None

    def run(self, items, score):
        """One reply item per input: {"dense"|"logits": bin} or {"error": ...}."""
        out = [None] * len(items)
        good = []
        for i, item in enumerate(items):
            err = self.item_error(item, score)
            if err:
                out[i] = {"error": {"code": err.code, "message": str(err)}}
            else:
                good.append(i)
        # Without an attention mask padding would change the outputs: run inputs alone.
        groups = [good] if "attention_mask" in self.inputs else [[i] for i in good]
        for group in (g for g in groups if g):
            for i, vec in zip(group, self.forward([items[i] for i in group], score)):
                if not score and items[i].get("normalize"):
                    vec = vec / max(float(np.sqrt(np.dot(vec, vec))), 1e-12)
                out[i] = {"logits" if score else "dense": vec.astype("<f4").tobytes()}
        return out

    def forward(self, items, score):
        n, t = len(items), max(len(it["ids"]) for it in items)
        ids = torch.full((n, t), self.pad, dtype=torch.int64)
        mask = torch.zeros((n, t), dtype=torch.int64)
        types = torch.zeros((n, t), dtype=torch.int64)
        for i, it in enumerate(items):
            k = len(it["ids"])
            ids[i, :k] = torch.tensor(it["ids"], dtype=torch.int64)
            mask[i, :k] = 1
            if score and it.get("type_ids"):
                types[i, :k] = torch.tensor(it["type_ids"], dtype=torch.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        try:
            with torch.inference_mode():
                y = self.output(self.module(**{k: feed[k].to(self.device) for k in self.inputs}), score)
                return self.finish(y.to(device="cpu", dtype=torch.float32), mask, n, t, score)
        except Failure:
            raise
        except Exception as e:
            raise Failure("INFERENCE_ERROR", short(e))

    def output(self, y, score):
        names = ("logits",) if score else ("sentence_embedding", "last_hidden_state")
        if isinstance(y, dict):
            y = next((y[k] for k in names if k in y), next(iter(y.values()), None))
        elif isinstance(y, (tuple, list)):
            y = y[0] if y else None
        if not isinstance(y, torch.Tensor):
            raise Failure("INFERENCE_ERROR",
                          f"the module returned {type(y).__name__}, not a tensor")
        return y

    def finish(self, y, mask, n, t, score):
        shape = list(y.shape)
        if score:
            if y.dim() == 1 and shape[0] == n:
                y = y[:, None]
            if y.dim() != 2 or shape[0] != n:
                raise Failure("INFERENCE_ERROR", f"logits of shape {shape}, expected [{n}, labels]")
            return y.numpy()
        if y.dim() == 3 and shape[:2] == [n, t]:
            if self.pooling == "cls":
                y = y[:, 0]
            else:
                m = mask[:, :, None].to(torch.float32)
                y = (y * m).sum(dim=1) / m.sum(dim=1)
        elif y.dim() != 2 or shape[0] != n:
            raise Failure("INFERENCE_ERROR",
                          f"output of shape {shape}, expected [{n}, {t}, hidden] or [{n}, hidden]")
        return y.numpy()


def parse_device(value):
    """A torch.device from option device (cpu, cuda, cuda:N) that this torch can use."""
    if not isinstance(value, str) or not re.fullmatch(r"cpu|cuda(:[0-9]+)?", value):
        raise Failure("INVALID_INPUT", f"pytorch option device={value!r}: cpu, cuda or cuda:N")
    if value.startswith("cuda"):
        have = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if int(value[5:] or 0) >= have:
            raise Failure("INVALID_INPUT",
                          f"pytorch option device={value}: torch {torch.__version__} sees {have} CUDA device(s)")
    return torch.device(value)


def transformers_version():
    """transformers' version where this Python can import it, else None (without importing it)."""
    if importlib.util.find_spec("transformers") is None:
        return None
    try:
        from importlib.metadata import version
        return version("transformers")
    except Exception:
        return "unknown"


def load_torchscript(full):
    """(module, the inputs of INPUTS it takes) of a TorchScript file."""
    name = os.path.basename(full)
    try:
        module = torch.jit.load(full, map_location="cpu").eval()
    except Exception as e:
        raise Failure("MODEL_LOAD_FAILED", f"{full}: {short(e)}")
    try:
        args = module.forward.schema.arguments[1:]  # [0] is self
    except Exception as e:
        raise Failure("MODEL_LOAD_FAILED", f"{full}: no forward method ({short(e)})")
    for a in args:  # an extra argument with a default value needs no feeding
        if a.name not in INPUTS and a.default_value is None:
            raise Failure("INVALID_INPUT", f"{name}: the graph's input '{a.name}' is not "
                          f"one Shoal feeds ({', '.join(INPUTS)})")
    inputs = [a.name for a in args if a.name in INPUTS]
    if "input_ids" not in inputs:
        raise Failure("INVALID_INPUT", f"{name}: the module takes no input_ids")
    return module, inputs


def model_class(transformers, task, config):
    """The class a checkpoint loads as: its own base class where config.json names one
    (T5EncoderModel: AutoModel would make the whole encoder-decoder), else the Auto class
    for the task (which also takes a base model out of a checkpoint with a head)."""
    archs = config.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    if task == "encode" and arch.endswith("Model") and isinstance(getattr(transformers, arch, None), type):
        return getattr(transformers, arch)
    return transformers.AutoModelForSequenceClassification if task == "score" else transformers.AutoModel


def load_transformers(path, task, config):
    """(module, the inputs of INPUTS it takes) of a Hugging Face directory (config: its
    config.json) through transformers.

    Every weight the class needs must be in the checkpoint: transformers would
    start missing ones at random (a pooler, unused here, excepted)."""
    try:
        import transformers
    except ImportError as e:
        model_type = config.get("model_type", "")
        raise Failure("MODEL_LOAD_FAILED",
                      f"{path}: model_type {model_type!r} is not one the native runtime runs, and "
                      f"{sys.executable} cannot import transformers to run it ({e}; "
                      "SHOAL_PYTORCH_PYTHON names another Python)")
    auto = model_class(transformers, task, config)
    try:
        module, info = auto.from_pretrained(path, local_files_only=True, output_loading_info=True)
    except Exception as e:
        raise Failure("MODEL_LOAD_FAILED", f"{path}: transformers {transformers.__version__}: {short(e)}")
    info = info or {}  # its lists are sets in some versions
    missing = sorted(k for k in info.get("missing_keys", [])
                     if not (task == "encode" and ".pooler." in f".{k}"))
    for what, keys in (("not in the checkpoint", missing),
                       ("of another shape in the checkpoint", list(info.get("mismatched_keys", [])))):
        if keys:
            names = ", ".join(str(k) for k in list(keys)[:3]) + (", ..." if len(keys) > 3 else "")
            raise Failure("MODEL_LOAD_FAILED", f"{path}: {len(keys)} weight(s) of "
                          f"{type(module).__name__} {what} ({names})")
    params = inspect.signature(module.forward).parameters
    inputs = [name for name in INPUTS if name in params]
    if "input_ids" not in inputs:
        raise Failure("INVALID_INPUT", f"{path}: {type(module).__name__} takes no input_ids")
    log(f"{path}: {type(module).__name__} through transformers {transformers.__version__}")
    return module.eval(), inputs


class Runtime:
    """Process-wide state: the executor, the batches in flight, stopping."""

    def __init__(self):
        self.executor = ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2)))
        self.cond = threading.Condition()
        self.in_flight, self.stopping, self.threads_set = 0, False, False

    def set_threads(self, n):
        with self.cond:
            if not self.threads_set and isinstance(n, int) and n > 0:
                torch.set_num_threads(n)
                self.threads_set = True


class Connection:
    def __init__(self, runtime, sock, on_stopped):
        self.rt, self.sock, self.on_stopped = runtime, sock, on_stopped
        self.write_lock, self.models, self.said_hello = threading.Lock(), {}, False
        self.rfile = sock.makefile("rb")

    def send(self, msg):
        data = msgpack.packb(msg, use_bin_type=True)
        with self.write_lock:
            try:
                self.sock.sendall(struct.pack(">I", len(data)) + data)
            except OSError:
                pass  # the peer is gone; the reader sees it

    def reply(self, id_, ok=None, error=None):
        if error is not None:
            self.send({"id": id_, "error": {"code": error.code, "message": str(error)}})
        else:
            self.send({"id": id_, "ok": ok if ok is not None else {}})

    def read_frame(self):
        """One frame's bytes; None when the socket closed or the frame is too long."""
        head = self.rfile.read(4)
        if len(head) < 4:
            return None
        (n,) = struct.unpack(">I", head)
        if n > MAX_FRAME:
            log(f"a frame of {n} bytes, over the limit of {MAX_FRAME}: closing")
            return None
        body = self.rfile.read(n)
        return body if len(body) == n else None

    def serve(self):
        """Reads requests until the socket closes or a protocol error."""
        try:
            while (frame := self.read_frame()) is not None:
                try:
                    msg = msgpack.unpackb(frame, raw=False)
                except Exception as e:
                    log(f"an unreadable frame ({e}): closing")
                    break
                id_ = msg.get("id") if isinstance(msg, dict) else None
                if type(id_) is not int:
                    log("a request without an id: closing")
                    break
                if not self.handle(id_, msg):
                    break
        except OSError:
            pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def handle(self, id_, msg):
        """Answers or dispatches one request; False to close the connection."""
        op = msg.get("op")
        if not self.said_hello and op != "hello":
            self.reply(id_, error=Failure("INVALID_INPUT", "the first request must be hello"))
            return False
        if op == "hello":
            versions = msg.get("versions")
            if not isinstance(versions, list) or 1 not in versions:
                self.reply(id_, error=Failure(
                    "INVALID_INPUT", "this runtime speaks protocol versions [1]"))
                return False
            self.said_hello = True
            hf = transformers_version()
            version = f"torch {torch.__version__}" + (f", transformers {hf}" if hf else "")
            self.reply(id_, {"protocol": 1, "runtime": NAME, "version": version,
                             "tasks": ["encode", "score"], "lora": False, "memory_bytes": 0,
                             "input": "tokens"})
        elif op == "health":
            self.reply(id_, {"models": len(self.models)})
        elif op == "memory":
            self.reply(id_, {"rss_bytes": rss_bytes(),
                             "models": {h: m.memory for h, m in list(self.models.items())}})
        elif self.rt.stopping:
            self.reply(id_, error=Failure("NO_CAPACITY", "runtime pytorch is stopping"))
        elif op == "stop":
            with self.rt.cond:
                self.rt.stopping = True
            threading.Thread(target=self.finish_stop, args=(id_,), daemon=True).start()
        elif op == "tokenize":
            self.reply(id_, error=Failure("INVALID_INPUT",
                                          "runtime pytorch takes tokens: Shoal tokenizes"))
        elif op == "check_lora":
            self.reply(id_, error=Failure("INVALID_INPUT", "runtime pytorch runs no LoRA adapters"))
        elif op in ("load", "encode", "score", "unload", "loras"):
            try:
                if op == "load":
                    handle = msg.get("model")
                    if not isinstance(handle, str) or not handle:
                        raise Failure("INVALID_INPUT", "load: no model handle")
                    if handle in self.models:
                        raise Failure("INVALID_INPUT", f"model '{handle}' is already loaded")
                    self.submit(id_, self.load, msg)
                    return True
                model = self.model(msg)
                if op == "unload":
                    self.models.pop(msg["model"], None)
                    self.reply(id_, {})
                elif op == "loras":
                    if msg.get("loras"):
                        raise Failure("INVALID_INPUT",
                                      f"model '{model.id}' runs no LoRA adapters (runtime pytorch)")
                    self.reply(id_, {})
                else:
                    if model.task != op:
                        raise Failure("INVALID_INPUT", f"model '{msg['model']}' serves "
                                      f"{model.task}, not {op}")
                    if not isinstance(msg.get("items"), list):
                        raise Failure("INVALID_INPUT", f"{op}: items is not a list")
                    self.submit(id_, lambda m: {"items": model.run(m["items"], op == "score")}, msg)
            except Failure as e:
                self.reply(id_, error=e)
        else:
            self.reply(id_, error=Failure("INVALID_INPUT", f"unknown op {str(op)!r}"))
        return True

    def model(self, msg):
        handle = msg.get("model")
        if handle not in self.models:
            raise Failure("MODEL_NOT_FOUND", f"no model '{handle}' is loaded")
        return self.models[handle]

    def submit(self, id_, fn, msg):
        with self.rt.cond:
            self.rt.in_flight += 1

        def task():
            try:
                self.reply(id_, fn(msg))
            except Failure as e:
                self.reply(id_, error=e)
            except Exception as e:  # a bug here, not the model's
                self.reply(id_, error=Failure("INTERNAL", f"{type(e).__name__}: {e}"))
            finally:
                with self.rt.cond:
                    self.rt.in_flight -= 1
                    self.rt.cond.notify_all()

        self.rt.executor.submit(task)

    def load(self, msg):
        start = time.monotonic()
        self.rt.set_threads(msg.get("threads"))
        model = Model(msg)
        self.models[msg["model"]] = model
        log(f"loaded {model.id} from {msg['config']['path']} in {time.monotonic() - start:.2f} s")
        return {"memory_bytes": model.memory, "max_tokens": model.max_tokens}

    def finish_stop(self, id_):
        with self.rt.cond:
            self.rt.cond.wait_for(lambda: self.rt.in_flight == 0)
        self.reply(id_, {})
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # ends serve()
        except OSError:
            pass
        self.on_stopped()


def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def main(argv):
    rt = Runtime()
    if len(argv) == 2 and argv[0] == "--listen":
        return listen(rt, argv[1])
    fd = os.environ.get("SHOAL_RUNTIME_FD")
    if argv or not fd or not fd.isdigit():
        print("usage: runtime.py (with SHOAL_RUNTIME_FD set) | runtime.py --listen PATH",
              file=sys.stderr)
        return 2
    Connection(rt, socket.socket(fileno=int(fd)), lambda: None).serve()
    rt.executor.shutdown(wait=True, cancel_futures=True)
    return 0


def listen(rt, path):
    if os.path.exists(path):
        os.unlink(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)
    server.settimeout(0.5)
    stopped = threading.Event()
    while not stopped.is_set():
        try:
            sock, _ = server.accept()
        except socket.timeout:
            continue
        sock.settimeout(None)
        conn = Connection(rt, sock, stopped.set)
        threading.Thread(target=conn.serve, daemon=True).start()
    server.close()
    os.unlink(path)
    rt.executor.shutdown(wait=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
