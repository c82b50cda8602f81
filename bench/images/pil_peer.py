#!/usr/bin/python3
"""The peer of bench/images.cc: an image prepared for a vision model the way
Hugging Face's processors prepare it — PIL decodes (Image.open, exif_transpose,
convert("RGB")), PIL resizes, numpy crops, rescales and normalizes.

usage: pil_peer.py make FILE WIDTH HEIGHT
         writes a photo-like JPEG (gradients, texture, noise; quality 90, 4:2:0)
       pil_peer.py run FILE CONFIG.json IMAGES REPEATS
         prints {"decode_ms": [...], "total_ms": [...]}: per image, one value a
         round; each round decodes (and prepares) the file IMAGES times

The processor steps are tests/reference/image_reference.py's (checked there
against Shoal's to the bit); this program only times them, single-threaded,
as PIL and numpy run.
"""
import io
import json
import sys
import time

import numpy as np
from PIL import Image, ImageOps

sys.path.insert(0, __file__.rsplit("/", 3)[0] + "/tests/reference")
from image_reference import preprocess  # noqa: E402


def make(path, w, h):
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([128 + 100 * np.sin(x / 97 + y / 211), 128 + 90 * np.cos(y / 53),
                    128 + 80 * np.sin((x + y) / 31)], axis=-1)
    img += 12 * np.sin(x / 3.1)[..., None] * np.cos(y / 2.7)[..., None]  # texture
    img += rng.normal(0, 6, size=img.shape)
    Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB").save(path, "JPEG", quality=90)


def run(path, config_path, images, repeats):
    data = open(path, "rb").read()
    config = json.load(open(config_path))
    kind = config.get("image_processor_type") or config.get("feature_extractor_type")
    clip = kind.startswith("CLIP")
    defaults = dict(shortest=clip, crop=clip, resample=3 if clip or kind.startswith("Siglip") else 2,
                    mean=[0.48145466, 0.4578275, 0.40821073] if clip else [0.5] * 3,
                    std=[0.26862954, 0.26130258, 0.27577711] if clip else [0.5] * 3)
    decode, total = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(images):
            with Image.open(io.BytesIO(data)) as im:
                rgb = np.asarray(ImageOps.exif_transpose(im).convert("RGB"))
        t1 = time.perf_counter()
        for _ in range(images):
            with Image.open(io.BytesIO(data)) as im:
                rgb = np.asarray(ImageOps.exif_transpose(im).convert("RGB"))
            preprocess(rgb, config, defaults)
        t2 = time.perf_counter()
        decode.append((t1 - t0) * 1000 / images)
        total.append((t2 - t1) * 1000 / images)
    print(json.dumps({"decode_ms": decode, "total_ms": total}))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) == 6 and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(__doc__)
