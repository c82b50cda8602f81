"""A small safetensors reader (numpy), independent of the `safetensors` package.

Format: 8-byte little-endian u64 header length N, then N bytes of JSON
{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
then the data section; offsets are relative to the start of the data section.

Every tensor is returned as a float32 or float64 numpy array (read_tensors'
`dtype`); BF16 is widened by shifting its 16 bits into the high half of an
f32, which is exact.
"""
import json
import os
import struct

import numpy as np

# dtype name -> (numpy dtype of the stored little-endian element, bytes per element)
_DTYPES = {
    "F64": (np.dtype("<f8"), 8),
    "F32": (np.dtype("<f4"), 4),
    "F16": (np.dtype("<f2"), 2),
    "BF16": (np.dtype("<u2"), 2),  # raw bits; widened below
    "I64": (np.dtype("<i8"), 8),
    "I32": (np.dtype("<i4"), 4),
}


def read_header(path):
    """Returns (header dict without __metadata__, metadata dict, data start offset)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    return header, meta, 8 + n


def read_tensors(path, dtype=np.float32):
    """All tensors of one .safetensors file: {name: ndarray} (floats as `dtype`)."""
    header, _, start = read_header(path)
    size = os.path.getsize(path)
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, info in header.items():
        st_dtype = info["dtype"]
        if st_dtype not in _DTYPES:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {st_dtype}")
        np_dtype, width = _DTYPES[st_dtype]
        shape = tuple(info["shape"])
        begin, end = info["data_offsets"]
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if end - begin != count * width or start + end > size:
            raise ValueError(f"{path}: tensor {name}: offsets {begin}..{end} do not fit "
                             f"shape {shape} of {st_dtype}")
        buf = raw[start + begin:start + end].view(np_dtype).reshape(shape)
        if st_dtype == "BF16":
            arr = (buf.astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.array(buf)
        if arr.dtype.kind == "f":
            arr = arr.astype(dtype)
        out[name] = arr
    return out


def read_model_dir(model_dir, dtype=np.float32):
    """Tensors of every *.safetensors file in a model directory (sharded or not)."""
    files = sorted(f for f in os.listdir(model_dir) if f.endswith(".safetensors"))
    if not files:
        raise FileNotFoundError(f"{model_dir}: no .safetensors file")
    tensors = {}
    for f in files:
        tensors.update(read_tensors(os.path.join(model_dir, f), dtype))
    return tensors
