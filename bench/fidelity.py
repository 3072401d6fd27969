"""Fidelity scoring: how well OCR of a screenshot agrees with the page's DOM, and what one
score costs, against plain Tesseract measured in the same run.

Table 1, per page of evalsets/basic: the page rendered in Chromium, its PNG read by OCR and
scored against the page's own DOM words (1 everywhere would be perfect agreement), with our
OCR (dark areas inverted, one thread) and with the baseline (Tesseract's defaults on the
plain screenshot, OpenMP threads as it likes). CPU is this process plus Tesseract's.

Table 2: the live score as the tool worker runs it (FidelityScorer: a render through the
previews' Screenshotter, OCR of the screenshot, the metrics) on the 1280-px landing page,
first with a screenshot not yet read (OCR included) and then with its OCR shared. That wall
time is how long the `fidelity` event follows `variant_complete`; `variant_complete` itself
waits for no score (the runner scores after emitting it; tests/e2e/test_fidelity.py).

Run alone: .venv/bin/python bench/fidelity.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import resource
import statistics
import time

import numpy as np
import pytesseract
from PIL import Image

from services.common.images import ImageDecoder, ImageLimits
from services.common.input_images import InputImage
from services.common.vendor import DEFAULT_VENDOR_DIR, VendorCatalog
from services.eval.render import renderer
from services.eval.sets import load_set
from services.fidelity import ocr
from services.fidelity.lines import Word, group_words
from services.fidelity.metrics import Scores
from services.fidelity.score import score_png
from services.tools.fidelity import FidelityScorer
from services.tools.screenshot import ScreenshotSettings, Screenshotter

CHROMIUM = "/usr/bin/chromium"


def cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def baseline_ocr(png: bytes) -> ocr.OcrPage:
    """Tesseract's defaults on the plain screenshot (no inversion, its own threads), the
    words filtered, coloured and grouped as ours are: what a first attempt would do."""
    with Image.open(io.BytesIO(png)) as opened:
        image = opened.convert("RGB")
    limit = os.environ.pop("OMP_THREAD_LIMIT", None)
    try:
        data = pytesseract.image_to_data(image, lang="eng", output_type=pytesseract.Output.DICT)
    finally:
        if limit is not None:
            os.environ["OMP_THREAD_LIMIT"] = limit
    pixels = np.asarray(image, dtype=np.uint8)
    words = []
    for i, raw in enumerate(data["text"]):
        text = str(raw).strip()
        if not text or float(data["conf"][i]) < ocr.MIN_CONFIDENCE:
            continue
        x, y, w, h = (int(data[k][i]) for k in ("left", "top", "width", "height"))
        words.append(Word(text, x, y, w, h, ocr.word_color(pixels, x, y, w, h)))
    return ocr.OcrPage(group_words(words, image.width, image.height), tuple(words))


def row(scores: Scores) -> str:
    return " ".join(f"{v:5.2f}" for v in scores.as_dict().values() if v is not None)


async def agreement() -> None:
    print("OCR/DOM agreement of each page with its own PNG (block text pos color visual)")
    print(
        f"{'page':16} {'width':>5}  {'ours':29} {'cpu s':>5}  {'baseline':29} {'cpu s':>5}  ratio"
    )
    ours_cpu: list[float] = []
    base_cpu: list[float] = []
    async with renderer(VendorCatalog.load(DEFAULT_VENDOR_DIR)) as chromium:
        for ref in load_set("basic").items:
            if not ref.is_html:
                continue
            rendering = await chromium.render(ref.path.read_text(encoding="utf-8"), ref.viewport)
            results = []
            for read in (baseline_ocr, ocr.ocr_page):
                start = cpu_s()
                page = read(rendering.png)
                scores = score_png(page, rendering.png, rendering.words, rendering.png).scores
                results.append((scores, cpu_s() - start))
            (base, base_s), (ours, ours_s) = results
            ours_cpu.append(ours_s)
            base_cpu.append(base_s)
            print(
                f"{ref.id:16} {ref.viewport.width:5}  {row(ours):29} {ours_s:5.2f}  "
                f"{row(base):29} {base_s:5.2f}  {base_s / max(ours_s, 1e-9):4.1f}x"
            )
    print(
        f"CPU of one score (OCR + metrics), median: ours {statistics.median(ours_cpu):.2f} s, "
        f"max {max(ours_cpu):.2f} s; baseline {statistics.median(base_cpu):.2f} s\n"
    )


async def live(runs: int) -> None:
    ref = next(r for r in load_set("basic").items if r.id == "landing")
    html = ref.path.read_text(encoding="utf-8")
    settings = ScreenshotSettings(chromium_path=CHROMIUM)
    shooter = Screenshotter(settings)
    try:
        png, _ = await shooter.render_for_score(html, 1280, 800, "() => 0", timeout_s=30)
        image = InputImage.of("image/png", png)
        print("Live score of the landing page at 1280 px (FidelityScorer, render included)")
        print(f"{'case':30} {'wall s':>7} {'cpu s':>6}  (cpu: this process and Tesseract)")
        for case in ("screenshot not yet read", "screenshot's OCR shared"):
            walls, cpus = [], []
            for _ in range(runs):
                # A fresh scorer has not read the screenshot; one that scored another
                # option's page has (and keeps scores: this page differs from that one).
                scorer = FidelityScorer(shooter, ImageDecoder(ImageLimits()))
                keep = None
                if case.endswith("shared"):
                    other = html.replace("</body>", "<p>Another option</p></body>", 1)
                    keep = await scorer.score(other, image, image_index=0, width=0, timeout_s=30)
                start_wall, start_cpu = time.perf_counter(), cpu_s()
                outcome = await scorer.score(html, image, image_index=0, width=0, timeout_s=30)
                walls.append(time.perf_counter() - start_wall)
                cpus.append(cpu_s() - start_cpu)
                assert outcome.scores is not None, outcome.unavailable_reason
                del keep
            print(f"{case:30} {statistics.median(walls):7.2f} {statistics.median(cpus):6.2f}")
        print("variant_complete waits for a score: 0 s (it is sent before scoring starts)")
    finally:
        await shooter.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    await agreement()
    await live(args.runs)


if __name__ == "__main__":
    asyncio.run(main())
