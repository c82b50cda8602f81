#!/usr/bin/env python3
"""Issue 25's image models through Shoal against transformers itself.

usage: transformers_image_check.py --shoal BIN --models DIR [--names a,b,...] [--port 18091] [--shoal-only]

The float64 references (tests/reference/image_reference.py,
text_tower_reference.py) are written from the architectures; this checks
the same seeded models (scripts/make-test-vision-models) against the library
their users run: each model's class from its config.json's `architectures`
and its image processor (AutoImageProcessor) and tokenizer (AutoTokenizer)
in transformers, float32, on the GPU when there is one. Shoal answers
through the whole serving path of the CPU runtime: `shoal up`, each model
registered through /v1/admin/models as a user would (its task inferred),
then /v1/encode, /v1/score and /v1/extract with PNG images (lossless: both
sides decode the same pixels) of several shapes, so that resizing and
cropping are exercised.

  image towers (CLIPVisionModelWithProjection, SiglipVisionModel): each
      image's embedding, unit-normalised on both sides: cosine >= 0.9999 and
      max |difference| <= 1e-3;
  two towers (CLIPModel, SiglipModel): images and texts alike, and an image
      scored against texts (`raw_scores`: the logits, scale · cosine + bias)
      within 1e-3 · max(1, |logit|) of logits_per_image; SigLIP's texts
      padded to its positions as its processor's padding="max_length" does;
  ViTForImageClassification: every label's softmax score within 1e-4.

Prints one line per model; exit status 0 when every model matched. Run by
scripts/gpu-check, where transformers and a GPU are present. --shoal-only
asks Shoal alone and prints what it answered (for a machine without
transformers: the requests and the cluster are checked, not the numbers).
"""
import argparse
import base64
import io
import json
import math
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoal_up  # noqa: E402

MODELS = ["clip-vision-tiny", "siglip-vision-tiny", "vit-classifier-tiny", "clip-tiny", "siglip-tiny"]
TEXTS = ["a photo of a cat", "a red dog on the grass", "blue fish"]


def log(msg):
    print(f"transformers_image_check: {msg}", file=sys.stderr, flush=True)


def images():
    """Seeded PNGs: landscape, portrait and square, smooth with noise."""
    from PIL import Image
    rng = random.Random(25)
    out = []
    for w, h in [(64, 48), (37, 91), (200, 200)]:
        img = Image.new("RGB", (w, h))
        img.putdata([(int(255 * x / w) ^ rng.randrange(32), int(255 * y / h) ^ rng.randrange(32),
                      rng.randrange(256)) for y in range(h) for x in range(w)])
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        out.append((img, base64.b64encode(buf.getvalue()).decode()))
    return out


def unit(v):
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


def compare_vectors(got, want):
    """(min cosine, max |diff|) of unit vectors."""
    got, want = unit(got), unit(want)
    return sum(a * b for a, b in zip(got, want)), max(abs(a - b) for a, b in zip(got, want))


class Shoal:
    def __init__(self, url, name):
        self.url, self.name = url, name

    def embed(self, items):
        answer = shoal_up.post(f"{self.url}/v1/encode/{self.name}", {"items": items, "normalize": True})
        return [item["dense"] for item in answer["items"]]

    def logits(self, image64, texts):
        body = {"query": {"image": image64}, "texts": texts, "raw_scores": True}
        return shoal_up.post(f"{self.url}/v1/score/{self.name}", body)["scores"]

    def labels(self, image64):
        answer = shoal_up.post(f"{self.url}/v1/extract/{self.name}", {"items": [{"image": image64}]})
        return {l["label"]: l["score"] for l in answer["items"][0]["labels"]}


class Library:
    """The model as transformers runs it."""

    def __init__(self, path, device):
        import torch
        import transformers
        with open(os.path.join(path, "config.json")) as f:
            arch = json.load(f)["architectures"][0]
        self.torch, self.device = torch, device
        # float32 whatever the weights' dtype and the library's default
        self.model = getattr(transformers, arch).from_pretrained(path).to(device).float().eval()
        self.processor = transformers.AutoImageProcessor.from_pretrained(path)
        self.siglip = "Siglip" in arch
        self.tokenizer = (transformers.AutoTokenizer.from_pretrained(path)
                          if arch in ("CLIPModel", "SiglipModel") else None)

    def pixels(self, img):
        return self.processor(images=[img], return_tensors="pt")["pixel_values"].to(self.device)

    def tokens(self, text):
        # One text a call: no padding but SigLIP's own (to its positions,
        # attended to: SigLIP takes no attention mask).
        padding = "max_length" if self.siglip else False
        ids = self.tokenizer([text], padding=padding, return_tensors="pt")["input_ids"]
        return {"input_ids": ids.to(self.device)}

    def image_embedding(self, img):
        with self.torch.no_grad():
            if hasattr(self.model, "get_image_features"):
                v = self.model.get_image_features(pixel_values=self.pixels(img))
            else:
                out = self.model(pixel_values=self.pixels(img))
                v = out.image_embeds if getattr(out, "image_embeds", None) is not None else out.pooler_output
        return v[0].double().cpu().tolist()

    def text_embedding(self, text):
        with self.torch.no_grad():
            v = self.model.get_text_features(**self.tokens(text))
        return v[0].double().cpu().tolist()

    def logits(self, img, texts):
        out = []
        with self.torch.no_grad():
            for text in texts:
                out.append(self.model(pixel_values=self.pixels(img), **self.tokens(text)).logits_per_image[0, 0].item())
        return out

    def labels(self, img):
        with self.torch.no_grad():
            p = self.model(pixel_values=self.pixels(img)).logits[0].double().softmax(-1).cpu().tolist()
        return {self.model.config.id2label[i]: s for i, s in enumerate(p)}


def check(url, name, path, device, shoal_only):
    shoal = Shoal(url, name)
    registered = shoal_up.register(url, name, path)
    task, two_towers = registered.get("task"), registered.get("image_text_score") in ("softmax", "sigmoid")
    pictures = images()
    if shoal_only:
        parts = [f"task {task}"]
        if task == "extract":
            parts.append(f"labels {sorted(shoal.labels(pictures[0][1]))}")
        else:
            dims = {len(v) for v in shoal.embed([{"image": b64} for _, b64 in pictures])}
            parts.append(f"image embeddings of {sorted(dims)} floats")
            if two_towers:
                parts.append(f"text embeddings of {len(shoal.embed([{'text': TEXTS[0]}])[0])} floats")
                parts.append(f"logits {[round(x, 4) for x in shoal.logits(pictures[0][1], TEXTS)]}")
        return True, ", ".join(parts)
    lib = Library(path, device)
    if task == "extract":
        worst = 0.0
        for img, b64 in pictures:
            got, want = shoal.labels(b64), lib.labels(img)
            if set(got) != set(want):
                return False, f"labels {sorted(got)} against {sorted(want)}"
            worst = max(worst, max(abs(got[k] - want[k]) for k in want))
        return worst <= 1e-4, f"max |score difference| {worst:.2e}"
    cos, diff = 1.0, 0.0
    got = shoal.embed([{"image": b64} for _, b64 in pictures])
    for v, (img, _) in zip(got, pictures):
        c, d = compare_vectors(v, lib.image_embedding(img))
        cos, diff = min(cos, c), max(diff, d)
    detail = f"images: min cosine {cos:.6f}, max |diff| {diff:.2e}"
    ok = cos >= 0.9999 and diff <= 1e-3
    if two_towers:
        tcos, tdiff = 1.0, 0.0
        for text, v in zip(TEXTS, shoal.embed([{"text": t} for t in TEXTS])):
            c, d = compare_vectors(v, lib.text_embedding(text))
            tcos, tdiff = min(tcos, c), max(tdiff, d)
        worst = 0.0
        for img, b64 in pictures:
            for g, w in zip(shoal.logits(b64, TEXTS), lib.logits(img, TEXTS)):
                worst = max(worst, abs(g - w) / max(1.0, abs(w)))
        detail += f"; texts: min cosine {tcos:.6f}, max |diff| {tdiff:.2e}; logits: max relative diff {worst:.2e}"
        ok = ok and tcos >= 0.9999 and tdiff <= 1e-3 and worst <= 1e-3
    return ok, detail


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--shoal", required=True)
    ap.add_argument("--models", required=True, help="the directory scripts/make-test-vision-models wrote")
    ap.add_argument("--names", default=",".join(MODELS))
    ap.add_argument("--port", type=int, default=18091)
    ap.add_argument("--shoal-only", action="store_true")
    args = ap.parse_args(argv)
    device = "cpu"
    if not args.shoal_only:
        import torch
        import transformers
        device = "cuda" if torch.cuda.is_available() else "cpu"
        log(f"transformers {transformers.__version__}, torch {torch.__version__} on {device}")

    names = [n for n in args.names.split(",") if n]
    work = tempfile.mkdtemp(prefix="shoal-images-")
    profile_dir = os.path.join(work, "models")  # none: each model is registered as a user would
    os.makedirs(profile_dir)

    def check_one(url, n):
        return check(url, n, os.path.abspath(os.path.join(args.models, n)), device, args.shoal_only)

    return shoal_up.check_each(args.shoal, profile_dir, work, args.port, names, check_one,
                               "answered" if args.shoal_only else "match transformers")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
