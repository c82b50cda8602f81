#!/usr/bin/python3
"""Reference images: what PIL decodes and what Hugging Face's image
processors compute, for Shoal's image tests (tests/unit/image_test.cc).

usage: image_reference.py OUT_DIR

Writes into OUT_DIR, from seeded pixels:
  samples/<name>         encoded images, written by PIL (JPEG, PNG, WebP, GIF)
  decoded/<name>.rgb     what PIL gives for each: Image.open, ImageOps.exif_transpose,
                         convert("RGB"), the raw bytes
  resized/<case>.rgb     PIL's Image.resize of decoded/photo.png.rgb to each size and
                         filter (reducing_gap None, as transformers calls it)
  configs/<name>.json    preprocessor_config.json files
  pixels/<config>/<image>.f32  pixel_values for each config and image, float32,
                         channels first, computed as transformers' image processors
                         compute them (below)
  manifest.json          {"decoded": {name: [width, height]}, "refused": [name...],
                          "resized": {case: [source, width, height, filter]},
                          "pixels": {config: {image: [height, width]}}}

The image processors, as transformers' CLIPImageProcessor, SiglipImageProcessor
and ViTImageProcessor define them (written here from their documented steps,
not imported: transformers is not installed here): an 8-bit RGB array;
resize with PIL (CLIP: the shortest edge to size, the other int(size * long /
short); the others: to height x width); CLIP's center crop at
((H - h) // 2, (W - w) // 2) with zero padding; rescale as float64 * factor,
cast to float32; normalize (x - mean) / std in float32; channels first.
"""
import io
import json
import os
import sys

import numpy as np
from PIL import Image, ImageOps

rng = np.random.default_rng(20261205)


def photo(w, h):
    """A smooth gradient with noise and a few edges: something a resampler can get wrong."""
    y, x = np.mgrid[0:h, 0:w]
    r = (x * 255 // max(w - 1, 1))
    g = (y * 255 // max(h - 1, 1))
    b = ((x + y) * 7) % 256
    img = np.stack([r, g, b], axis=-1).astype(np.int32)
    img += rng.integers(-20, 21, size=img.shape)
    img[h // 3: h // 2, w // 4: w // 2] = [250, 10, 120]
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")


def save(img, path, fmt, **kw):
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return buf.getvalue()


def exif_with(orientation):
    e = Image.Exif()
    e[0x0112] = orientation
    return e.tobytes()


def pil_decode(path):
    with Image.open(path) as im:
        im.seek(0)
        up = ImageOps.exif_transpose(im)
        return np.asarray(up.convert("RGB"))


def main(out):
    for d in ("samples", "decoded", "resized", "configs", "pixels"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    s = lambda name: os.path.join(out, "samples", name)
    base = photo(97, 61)
    alpha = Image.fromarray(rng.integers(0, 256, size=(61, 97), dtype=np.uint8), "L")
    rgba = base.copy()
    rgba.putalpha(alpha)

    # Decoded as PIL decodes them.
    save(base, s("photo.png"), "PNG")
    save(base, s("photo-q90.jpg"), "JPEG", quality=90)
    save(base, s("photo-444.jpg"), "JPEG", quality=95, subsampling=0)
    save(base, s("photo-progressive.jpg"), "JPEG", quality=80, progressive=True)
    save(base.convert("L"), s("grey.jpg"), "JPEG", quality=90)
    save(base.convert("CMYK"), s("cmyk.jpg"), "JPEG", quality=90)
    for o in range(1, 9):
        save(photo(40, 24), s(f"exif-{o}.jpg"), "JPEG", quality=92, exif=exif_with(o))
    save(rgba, s("rgba.png"), "PNG")
    save(base.convert("L"), s("grey.png"), "PNG")
    save(rgba.convert("LA"), s("grey-alpha.png"), "PNG")
    save(base.convert("1"), s("bilevel.png"), "PNG")
    pal = base.quantize(colors=16)
    save(pal, s("palette.png"), "PNG")
    save(pal, s("palette-transparent.png"), "PNG", transparency=3)
    save(base, s("exif-6.png"), "PNG", exif=exif_with(6))
    save(base, s("lossy.webp"), "WEBP", quality=80)
    save(base, s("lossless.webp"), "WEBP", lossless=True)
    save(rgba, s("alpha.webp"), "WEBP", quality=90, exact=True)
    save(base, s("exif-8.webp"), "WEBP", quality=85, exif=exif_with(8))
    save(base.quantize(colors=64), s("still.gif"), "GIF")
    frames = [photo(33, 21).quantize(colors=32) for _ in range(3)]
    save(frames[0], s("animated.gif"), "GIF", save_all=True, append_images=frames[1:], duration=50, loop=0)
    save(pal, s("transparent.gif"), "GIF", transparency=5)
    # 16-bit grey: PIL clips it to 255 on convert("RGB"); Shoal keeps the high
    # byte (as PIL does for 16-bit RGB), so its reference is written by hand.
    grey16 = (rng.integers(0, 65536, size=(9, 11))).astype(np.uint16)
    Image.fromarray(grey16, "I;16").save(s("grey16.png"))

    decoded = {}
    for name in sorted(os.listdir(os.path.join(out, "samples"))):
        rgb = pil_decode(s(name))
        if name == "grey16.png":
            rgb = np.repeat((grey16 >> 8).astype(np.uint8)[:, :, None], 3, axis=2)
        rgb.tofile(os.path.join(out, "decoded", name + ".rgb"))
        decoded[name] = [rgb.shape[1], rgb.shape[0]]

    # Refused: each must fail with INVALID_INPUT, never crash or hang.
    refused = []
    def bad(name, data):
        with open(s(name), "wb") as f:
            f.write(data)
        refused.append(name)
    jpg = open(s("photo-q90.jpg"), "rb").read()
    png = open(s("photo.png"), "rb").read()
    bad("truncated.jpg", jpg[: len(jpg) // 2])
    bad("truncated.png", png[: len(png) // 2])
    bad("corrupt.jpg", jpg[:200] + bytes(rng.integers(0, 256, size=600, dtype=np.uint8)) + jpg[800:])
    bad("corrupt.png", png[:100] + bytes(len(png) - 100))
    wide = Image.new("RGB", (100000, 1), (10, 20, 30))
    bad("wide.png", save(wide, os.devnull, "PNG"))
    # A bomb: a 20000 x 20000 PNG of zeros (400 MP) in a few hundred kilobytes.
    import zlib, struct
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    raw = zlib.compress(b"\0" * (20000 * 3 + 1) * 200, 9)  # only the first rows: the header is what matters
    bad("bomb.png", b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", raw) + chunk(b"IEND", b""))
    anim = io.BytesIO()
    frames[0].convert("RGB").save(anim, "WEBP", save_all=True, append_images=[f.convert("RGB") for f in frames[1:]],
                                  duration=50)
    bad("animated.webp", anim.getvalue())
    bad("text.txt", b"this is not an image\n")
    bad("empty.bin", b"")

    # Resized: every filter, up, down, one axis, both.
    resized = {}
    src = Image.open(s("photo.png")).convert("RGB")
    for f in range(6):
        for w, h in ((224, 224), (31, 17), (97, 30), (50, 61), (13, 200)):
            case = f"photo-{w}x{h}-f{f}"
            np.asarray(src.resize((w, h), resample=f, reducing_gap=None)).tofile(
                os.path.join(out, "resized", case + ".rgb"))
            resized[case] = ["photo.png", w, h, f]

    # Image processors.
    configs = {
        "clip": {"image_processor_type": "CLIPImageProcessor", "crop_size": {"height": 224, "width": 224},
                 "do_center_crop": True, "do_convert_rgb": True, "do_normalize": True, "do_rescale": True,
                 "do_resize": True, "image_mean": [0.48145466, 0.4578275, 0.40821073],
                 "image_std": [0.26862954, 0.26130258, 0.27577711], "resample": 3,
                 "rescale_factor": 0.00392156862745098, "size": {"shortest_edge": 224}},
        "clip-legacy": {"feature_extractor_type": "CLIPFeatureExtractor", "crop_size": 32, "size": 40,
                        "do_center_crop": True, "do_normalize": True, "do_resize": True, "resample": 3},
        "clip-pad": {"image_processor_type": "CLIPImageProcessor", "do_resize": False,
                     "crop_size": {"height": 80, "width": 50}},
        "siglip": {"image_processor_type": "SiglipImageProcessor", "do_normalize": True, "do_rescale": True,
                   "do_resize": True, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                   "resample": 3, "rescale_factor": 0.00392156862745098, "size": {"height": 64, "width": 48}},
        "vit": {"image_processor_type": "ViTImageProcessor", "do_normalize": True, "do_resize": True,
                "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "resample": 2, "size": 30},
    }
    clip_mean, clip_std = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
    defaults = {
        "CLIPImageProcessor": dict(shortest=True, crop=True, resample=3, mean=clip_mean, std=clip_std),
        "CLIPFeatureExtractor": dict(shortest=True, crop=True, resample=3, mean=clip_mean, std=clip_std),
        "SiglipImageProcessor": dict(shortest=False, crop=False, resample=3, mean=[0.5] * 3, std=[0.5] * 3),
        "ViTImageProcessor": dict(shortest=False, crop=False, resample=2, mean=[0.5] * 3, std=[0.5] * 3),
    }
    pixels = {}
    images = ["photo.png", "photo-q90.jpg", "exif-6.jpg", "grey.png", "animated.gif"]
    for cname, c in configs.items():
        with open(os.path.join(out, "configs", cname + ".json"), "w") as f:
            json.dump(c, f)
        os.makedirs(os.path.join(out, "pixels", cname), exist_ok=True)
        d = defaults[c.get("image_processor_type") or c.get("feature_extractor_type")]
        pixels[cname] = {}
        for name in images:
            arr = preprocess(pil_decode(s(name)), c, d)
            arr.astype(np.float32).tofile(os.path.join(out, "pixels", cname, name + ".f32"))
            pixels[cname][name] = [arr.shape[1], arr.shape[2]]

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"decoded": decoded, "refused": refused, "resized": resized, "pixels": pixels}, f, indent=1)


def box(v):
    return (v, v) if isinstance(v, int) else (v["height"], v["width"])


def preprocess(rgb, c, d):
    img = rgb
    if c.get("do_resize", True):
        size = c.get("size", 224)
        h, w = img.shape[:2]
        if isinstance(size, dict) and "shortest_edge" in size or (isinstance(size, int) and d["shortest"]):
            edge = size["shortest_edge"] if isinstance(size, dict) else size
            short, long = (w, h) if w <= h else (h, w)
            new_long = int(edge * long / short)
            nh, nw = (new_long, edge) if w <= h else (edge, new_long)
        else:
            nh, nw = box(size)
        img = np.asarray(Image.fromarray(img).resize((nw, nh), resample=c.get("resample", d["resample"]),
                                                     reducing_gap=None))
    if c.get("do_center_crop", d["crop"]):
        ch, cw = box(c.get("crop_size", 224))
        h, w = img.shape[:2]
        top, left = (h - ch) // 2, (w - cw) // 2
        if top >= 0 and left >= 0 and top + ch <= h and left + cw <= w:
            img = img[top:top + ch, left:left + cw]
        else:
            nh, nw = max(ch, h), max(cw, w)
            padded = np.zeros((nh, nw, 3), dtype=img.dtype)
            tp, lp = int(np.ceil((nh - h) / 2)), int(np.ceil((nw - w) / 2))
            padded[tp:tp + h, lp:lp + w] = img
            top, left = top + tp, left + lp
            img = padded[max(0, top):min(nh, top + ch), max(0, left):min(nw, left + cw)]
    x = img
    if c.get("do_rescale", True):
        x = (x.astype(np.float64) * c.get("rescale_factor", 1 / 255)).astype(np.float32)
    if c.get("do_normalize", True):
        x = x.astype(np.float32)
        mean = np.array(c.get("image_mean", d["mean"]), dtype=np.float32)
        std = np.array(c.get("image_std", d["std"]), dtype=np.float32)
        x = (x - mean) / std
    return np.ascontiguousarray(x.transpose(2, 0, 1))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
