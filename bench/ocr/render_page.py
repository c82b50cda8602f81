#!/usr/bin/python3
"""An A4 page of text for bench/ocr.cc, as a 150 dpi scan of a printed page
would be: 1240 x 1754 pixels, DejaVu Sans at 11 pt (23 px), 1.5 line
spacing, seeded sentences from a fixed vocabulary, light scanner noise.

The same lines are also set as a born-digital PDF (Helvetica 11 pt, where
the scan has them): page.pdf, one page, and pages.pdf, the page 50 times.

usage: render_page.py OUT_DIR   (writes page.png, page.pdf, pages.pdf and
                                 truth.json: the lines)
"""
import json
import os
import random
import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "reference"))
from pdf_reference import pdf  # noqa: E402

WORDS = ("the queue holds work for small models while workers pull and batch for themselves "
         "invoice total amount due 2026 page figure table model fleet gateway request latency "
         "embedding reranker classifier OCR document report summary section results method "
         "data value 17 42 315.40 EUR March April order number customer address street city").split()


def main(out):
    rng = random.Random(25)
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 23)
    page = Image.new("RGB", (1240, 1754), "white")
    draw = ImageDraw.Draw(page)
    lines, y, set_lines = [], 120, []
    while y + 40 < 1754 - 120:
        words = []
        while True:
            w = rng.choice(WORDS)
            if draw.textlength(" ".join(words + [w]), font=font) > 1000:
                break
            words.append(w)
        line = " ".join(words)
        if words and words[0][0].isalpha():
            line = line[0].upper() + line[1:]
        draw.text((120, y), line, fill=(25, 25, 25), font=font)
        lines.append(line)
        set_lines.append((57.6, round(842 - (y + 18) * 72 / 150, 2), 11, line))  # at 150 dpi, baseline 18 px down
        y += 35
    pixels = np.asarray(page).astype(np.int16)
    pixels += np.random.default_rng(25).integers(-12, 13, pixels.shape, dtype=np.int16)
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(f"{out}/page.png")
    json.dump(lines, open(f"{out}/truth.json", "w"))
    open(f"{out}/page.pdf", "wb").write(pdf([set_lines]))
    open(f"{out}/pages.pdf", "wb").write(pdf([set_lines] * 50))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
