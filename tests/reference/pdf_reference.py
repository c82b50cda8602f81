#!/usr/bin/python3
"""Reference PDFs for Shoal's document tests (tests/unit/pdf_test.cc).

usage: pdf_reference.py OUT_DIR

Writes into OUT_DIR:
  text.pdf        two A4 pages of Helvetica text, written here by hand from the PDF
                  format (objects, a content stream per page, the xref table); the
                  second page carries /Rotate 90
  layout.pdf      a report's page (a bold title, a paragraph, two columns, kerned and
                  spaced-out runs, a margin note set bottom to top) and that page again
                  under /Rotate 90
  many.pdf        10,000 empty pages
  huge-page.pdf   one page 100,000 points square
  encrypted.pdf   text.pdf encrypted by qpdf with a user password (AES-256)
  restricted.pdf  text.pdf encrypted by qpdf with an empty user password
  truncated.pdf, corrupt.pdf, not-a-pdf.pdf
  render-<page>-<dpi>.rgb   poppler's own pdftoppm (poppler-utils) rendering of
                  text.pdf's pages, as raw RGB
  manifest.json   {"words": [[words of page 1], [words of page 2]],
                   "renders": {"<page>-<dpi>": [width, height]},
                   "lines": [[{"words": [...], "box": [x0, y0, x1, y1]}, ...] per page of
                             layout.pdf, as poppler's own pdftotext -bbox-layout groups them]}
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

from PIL import Image

# A report's page: (x, y, size, text) set in Helvetica, ("bold", x, y, size,
# text) in Helvetica-Bold, or raw content-stream operators (bytes).
LAYOUT = [
    ("bold", 72, 770, 20, "Quarterly report: a fleet of small models"),
    (72, 740, 11, "Shoal served 48,213 requests on 12 machines,"),
    (72, 726, 11, "with a p99 of 38.2 ms (down from 56.1)."),
    (72, 712, 11, "Costs fell by 31 % against the managed API."),
    (72, 660, 11, "Left column, first line"), (320, 660, 11, "Right column one"),
    (72, 646, 11, "left column, second line"), (320, 646, 11, "right column two"),
    b"BT /F1 14 Tf 72 600 Td [(W) 120 (A) 80 (VE) -2500 (Total:) -3000 (315.40 EUR)] TJ ET\n",
    b"BT /F1 9 Tf 0 1 -1 0 560 300 Tm (Margin note set bottom to top) Tj ET\n",
    (300, 100, 10, "footer 3/9"),
]

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
    bold = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold >>")
    pages_id = len(objs) + 1 + 2 * len(pages)  # the page tree comes after every page and its content
    kids = []
    def op(line):
        if isinstance(line, bytes):
            return line
        name, (x, y, s, t) = ("F2", line[1:]) if line[0] == "bold" else ("F1", line)
        return f"BT /{name} {s} Tf {x} {y} Td ({t}) Tj ET\n".encode()
    for i, lines in enumerate(pages):
        ops = b"".join(op(line) for line in lines)
        content = add(b"<< /Length %d >>\nstream\n" % len(ops) + ops + b"endstream")
        extra = b" /Rotate %d" % rotate[i] if rotate and rotate[i] else b""
        kids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Contents %d 0 R "
                        b"/Resources << /Font << /F1 %d 0 R /F2 %d 0 R >> >>%s >>" % (pages_id, media[0], media[1], content, font,
                                                                        bold, extra)))
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
    open(p("layout.pdf"), "wb").write(pdf([LAYOUT, LAYOUT], rotate=[0, 90]))
    json.dump({"words": words, "renders": renders, "lines": pdftotext_lines(p("layout.pdf"))},
              open(p("manifest.json"), "w"))


def pdftotext_lines(path):
    """Each page's lines as poppler's pdftotext -bbox-layout groups them: their words and box."""
    subprocess.run(["pdftotext", "-bbox-layout", path, path + ".html"], check=True)
    ns = {"x": "http://www.w3.org/1999/xhtml"}
    pages = []
    for page in ET.parse(path + ".html").getroot().iterfind(".//x:page", ns):
        lines = []
        for line in page.iterfind(".//x:line", ns):
            box = [float(line.get(k)) for k in ("xMin", "yMin", "xMax", "yMax")]
            lines.append({"words": [w.text for w in line.iterfind("x:word", ns)], "box": box})
        pages.append(lines)
    os.remove(path + ".html")
    return pages


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
