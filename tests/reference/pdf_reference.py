#!/usr/bin/python3
"""Reference PDFs for Shoal's document tests (tests/unit/pdf_test.cc).

usage: pdf_reference.py OUT_DIR

Writes into OUT_DIR:
  text.pdf        two A4 pages of Helvetica text, written here by hand from the PDF
                  format (objects, a content stream per page, the xref table); the
                  second page carries /Rotate 90
  many.pdf        10,000 empty pages
  huge-page.pdf   one page 100,000 points square
  encrypted.pdf   text.pdf encrypted by qpdf with a user password (AES-256)
  restricted.pdf  text.pdf encrypted by qpdf with an empty user password
  truncated.pdf, corrupt.pdf, not-a-pdf.pdf
  render-<page>-<dpi>.rgb   poppler's own pdftoppm (poppler-utils) rendering of
                  text.pdf's pages, as raw RGB
  manifest.json   {"words": [[words of page 1], [words of page 2]],
                   "renders": {"<page>-<dpi>": [width, height]}}
"""
import json
import os
import subprocess
import sys

from PIL import Image

PAGES = [
    [(72, 720, 24, "Shoal reads this page"), (72, 680, 14, "second line 42"), (300, 100, 10, "footer")],
    [(72, 500, 18, "turned page")],
]


def pdf(pages, rotate=None, media=(595, 842)):
    """A PDF of `pages` (lists of (x, y, size, text)), Helvetica (a standard font: no embedding)."""
    objs = []
    def add(body):
        objs.append(body)
        return len(objs)
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    pages_id = len(objs) + 1 + 2 * len(pages)  # the page tree comes after every page and its content
    kids = []
    for i, lines in enumerate(pages):
        ops = "".join(f"BT /F1 {s} Tf {x} {y} Td ({t}) Tj ET\n" for x, y, s, t in lines).encode()
        content = add(b"<< /Length %d >>\nstream\n" % len(ops) + ops + b"endstream")
        extra = b" /Rotate %d" % rotate[i] if rotate and rotate[i] else b""
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Contents %d 0 R "
                        b"/Resources << /Font << /F1 %d 0 R >> >>%s >>" % (pages_id, media[0], media[1], content, font, extra)))
    assert add(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))) == pages_id
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, catalog, xref)
    return bytes(out)


def main(out):
    os.makedirs(out, exist_ok=True)
    p = lambda name: os.path.join(out, name)
    text = pdf(PAGES, rotate=[0, 90])
    open(p("text.pdf"), "wb").write(text)
    open(p("many.pdf"), "wb").write(pdf([[]] * 10000, media=(200, 200)))
    open(p("huge-page.pdf"), "wb").write(pdf([[(10, 10, 12, "big")]], media=(100000, 100000)))
    subprocess.run(["qpdf", "--encrypt", "secret", "owner", "256", "--", p("text.pdf"), p("encrypted.pdf")], check=True)
    subprocess.run(["qpdf", "--encrypt", "", "owner", "256", "--print=none", "--", p("text.pdf"), p("restricted.pdf")],
                   check=True)
    open(p("truncated.pdf"), "wb").write(text[: len(text) // 3])
    open(p("corrupt.pdf"), "wb").write(b"%PDF-1.4\n" + bytes(range(256)) * 8)
    open(p("not-a-pdf.pdf"), "wb").write(b"PK\x03\x04 a zip file\n")
    renders = {}
    for page, dpi in ((1, 72), (1, 144), (2, 72)):
        prefix = p(f"pdftoppm-{page}-{dpi}")
        subprocess.run(["pdftoppm", "-r", str(dpi), "-f", str(page), "-l", str(page), "-singlefile",
                        p("text.pdf"), prefix], check=True)
        img = Image.open(prefix + ".ppm").convert("RGB")
        os.remove(prefix + ".ppm")
        open(p(f"render-{page}-{dpi}.rgb"), "wb").write(img.tobytes())
        renders[f"{page}-{dpi}"] = list(img.size)
    words = [[w for _, _, _, t in lines for w in t.split()] for lines in PAGES]
    json.dump({"words": words, "renders": renders}, open(p("manifest.json"), "w"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
