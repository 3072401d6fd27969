"""The text blocks of a screenshot, read by Tesseract (Debian's `tesseract-ocr`).

A PNG has no DOM, so its text, boxes and colours come from OCR: Tesseract finds the words
and their boxes, each word's colour is read from its pixels, and the words are grouped into
blocks by the same rules as a page's DOM words (`lines.group_words`).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PIL import Image, ImageFilter

from services.fidelity.lines import Word, group_words
from services.fidelity.metrics import Color, PageBlocks
from services.fidelity.stop import Stop

# NumPy loads on the first reading, as in metrics.py.
if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# Tesseract's own confidence (0-100) under which a "word" is noise: an icon, a check mark
# or a photo's texture read as letters.
MIN_CONFIDENCE = 40.0
DEFAULT_TIMEOUT_S = 20.0
# Sparse-text segmentation (page segmentation mode 11): a screen is scattered labels,
# not a column of prose, and the default layout analysis (mode 3) drops short isolated
# words, such as the prices in a right-hand column of a phone page. Leptonica's adaptive
# Otsu threshold (method 1) keeps light text on coloured cards and dark bands that a
# global threshold turns into one blob. Both measured on evalsets/basic: docs/fidelity.md.
TESSERACT_CONFIG = "--oem 1 --psm 11 -c thresholding_method=1"
TESSERACT = "tesseract"
# How often a running Tesseract is checked on: a stopped score kills it within this.
POLL_S = 0.05


# The neighbourhood (px) whose mean luminance tells a dark background from a light one.
BACKGROUND_RADIUS = 24


class OcrError(Exception):
    """Tesseract is missing, failed, or ran out of time; says which."""


@dataclass(frozen=True)  # no slots: a tool worker shares one per image by weak reference
class OcrPage:
    """The blocks of a screenshot and its words (for a report's overlay)."""

    page: PageBlocks
    words: tuple[Word, ...]


def tesseract_available() -> bool:
    return shutil.which(TESSERACT) is not None


def _flat_rgb(png: bytes) -> Image.Image:
    with Image.open(io.BytesIO(png)) as image:
        rgba = image.convert("RGBA")
    flat = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    flat.alpha_composite(rgba)
    return flat.convert("RGB")


def word_color(pixels: NDArray[np.uint8], x: int, y: int, w: int, h: int) -> Color:
    """The ink colour of the word boxed at (x, y, w, h): the background is the median of a
    ring just outside the box, the ink the mean of the box's pixels furthest from it
    (anti-aliased edges sit between the two, so only the far ones count)."""
    import numpy as np

    height, width = pixels.shape[:2]
    x0, y0 = max(x - 2, 0), max(y - 2, 0)
    x1, y1 = min(x + w + 2, width), min(y + h + 2, height)
    patch = pixels[y0:y1, x0:x1].reshape(-1, 3).astype(np.float64)
    ring = np.concatenate(
        [
            pixels[y0, x0:x1],
            pixels[y1 - 1, x0:x1],
            pixels[y0:y1, x0],
            pixels[y0:y1, x1 - 1],
        ]
    ).astype(np.float64)
    background = np.median(ring, axis=0)
    distance = np.abs(patch - background).sum(axis=1)
    far = patch[distance >= 0.75 * distance.max()] if distance.max() > 0 else patch
    r, g, b = (round(float(v)) for v in far.mean(axis=0))
    return (r, g, b)


def dark_on_light(image: Image.Image) -> Image.Image:
    """Grey, with dark neighbourhoods inverted: Tesseract reads dark text on light and
    misses light text on dark cards and buttons, so every area whose surroundings are
    dark is flipped (measured on evalsets/basic: docs/fidelity.md)."""
    import numpy as np

    gray = image.convert("L")
    background = np.asarray(gray.filter(ImageFilter.BoxBlur(BACKGROUND_RADIUS)), dtype=np.int16)
    pixels = np.asarray(gray, dtype=np.int16)
    flipped = np.where(background < 128, 255 - pixels, pixels)
    return Image.fromarray(flipped.astype(np.uint8), mode="L")


def ocr_page(png: bytes, timeout_s: float = DEFAULT_TIMEOUT_S, stop: Stop | None = None) -> OcrPage:
    """The OCR blocks of a screenshot (blocking: run it in a thread). Raises Stopped when
    `stop` is set or reached, once Tesseract has really ended."""
    import numpy as np

    stop = stop or Stop()
    image = _flat_rgb(png)
    stop.check()
    data = _tesseract(dark_on_light(image), timeout_s, stop)
    stop.check()
    pixels = np.asarray(image, dtype=np.uint8)
    words: list[Word] = []
    for row in data:
        stop.check()
        text = row.get("text", "").strip()
        if not text or float(row["conf"]) < MIN_CONFIDENCE:
            continue
        if not any(ch.isalnum() for ch in text):
            continue
        x, y, w, h = (int(row[k]) for k in ("left", "top", "width", "height"))
        if w < 1 or h < 1:
            continue
        words.append(Word(text, x, y, w, h, word_color(pixels, x, y, w, h)))
    page = group_words(words, float(image.width), float(image.height))
    return OcrPage(page, tuple(words))


def _tesseract(image: Image.Image, timeout_s: float, stop: Stop) -> list[dict[str, str]]:
    """Tesseract's TSV rows for `image`. Its own process, polled: killed and waited for
    when the time is up or `stop` says so, so it never outlives the score that ran it."""
    # Tesseract's OpenMP threads cost about four times the CPU on a screenshot for no
    # gain in wall time on a shared machine.
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    command = [TESSERACT, "stdin", "stdout", "-l", "eng", *TESSERACT_CONFIG.split(), "tsv"]
    # Its input from a file, not a pipe: polling with communicate() can then only read.
    with tempfile.TemporaryFile() as source:
        image.save(source, format="PPM")  # uncompressed: nothing to spend on encoding
        source.seek(0)
        try:
            process = subprocess.Popen(
                command, stdin=source, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
            )
        except FileNotFoundError:
            raise OcrError("tesseract is not installed (Debian's tesseract-ocr)") from None
        except OSError as exc:
            raise OcrError(f"OCR failed: {exc}") from None
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                out, err = process.communicate(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                stop.check()
                if time.monotonic() >= deadline:
                    raise OcrError(f"OCR did not finish in {timeout_s:.0f} s") from None
    finally:
        if process.returncode is None:
            process.kill()
            process.communicate()  # reaps it: the slot is freed only once it is gone
    if process.returncode != 0:
        reason = err.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise OcrError(f"OCR failed: tesseract exited with {process.returncode}: {reason[0]}")
    lines = out.decode(errors="replace").splitlines()
    if not lines:
        return []
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=False)) for line in lines[1:]]
