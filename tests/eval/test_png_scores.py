"""The metrics with a PNG reference: its text blocks read by OCR, the candidate's from its
DOM words (docs/eval.md). Every page is rendered and read once per module."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
import pytest_asyncio

from services.common.vendor import DEFAULT_VENDOR_DIR, VendorCatalog
from services.eval.render import Renderer, Rendering, Viewport, _ScreenshotFailed, renderer
from services.eval.sets import load_set
from services.fidelity.metrics import Scores
from services.fidelity.ocr import OcrPage, ocr_page
from services.fidelity.score import score_png
from tests.eval.test_scores import BLOCKS, VIEWPORT, page

# `make test` installs Debian's tesseract-ocr; without it these fail rather than skip.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium() -> AsyncIterator[Renderer]:
    async with renderer(VendorCatalog.load(DEFAULT_VENDOR_DIR)) as r:
        yield r


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def reference(chromium: Renderer) -> tuple[Rendering, OcrPage]:
    rendering = await chromium.render(page(BLOCKS), VIEWPORT)
    return rendering, await asyncio.to_thread(ocr_page, rendering.png)


async def against(chromium: Renderer, ref: tuple[Rendering, OcrPage], html: str) -> Scores:
    rendering = await chromium.render(html, VIEWPORT)
    return score_png(ref[1], ref[0].png, rendering.words, rendering.png).scores


def values(scores: Scores) -> dict[str, float]:
    return {k: v for k, v in scores.as_dict().items() if v is not None}


async def test_ocr_reads_the_blocks_of_the_page(reference: tuple[Rendering, OcrPage]) -> None:
    texts = [b.text for b in reference[1].page.blocks]
    assert texts == [b.text for b in BLOCKS]


async def test_shipped_pages_score_high_against_their_own_png(chromium: Renderer) -> None:
    items = [ref for ref in load_set("basic").items if ref.is_html]
    renders = [await chromium.render(r.path.read_text(encoding="utf-8"), r.viewport) for r in items]
    # Two OCRs at a time: one core each (ocr_page limits Tesseract to one thread).
    slots = asyncio.Semaphore(2)

    async def read(png: bytes) -> OcrPage:
        async with slots:
            return await asyncio.to_thread(ocr_page, png)

    ocrs = await asyncio.gather(*(read(r.png) for r in renders))
    for ref, rendering, ocr in zip(items, renders, ocrs, strict=True):
        scores = values(score_png(ocr, rendering.png, rendering.words, rendering.png).scores)
        assert len(scores) == 5
        assert min(scores.values()) >= 0.9, f"{ref.id}: {scores}"


async def test_a_changed_text_colour_lowers_color(
    chromium: Renderer, reference: tuple[Rendering, OcrPage]
) -> None:
    same = values(await against(chromium, reference, page(BLOCKS)))
    red = values(
        await against(chromium, reference, page(tuple(replace(b, color="#dc2626") for b in BLOCKS)))
    )
    assert same["color"] >= 0.9
    assert red["color"] <= 0.7
    for name in ("block_match", "text", "position"):
        assert red[name] >= same[name] - 0.02, (name, red, same)


async def test_changed_words_lower_text(
    chromium: Renderer, reference: tuple[Rendering, OcrPage]
) -> None:
    swaps = {"bread": "cakes", "small": "large", "noon": "ten", "four": "five", "shop": "cafe"}
    reworded = tuple(
        replace(b, text=" ".join(swaps.get(w, w) for w in b.text.split())) for b in BLOCKS
    )
    same = values(await against(chromium, reference, page(BLOCKS)))
    scores = values(await against(chromium, reference, page(reworded)))
    assert scores["text"] <= 0.93 < same["text"]
    assert scores["color"] >= same["color"] - 0.02


async def test_a_moved_block_lowers_position(
    chromium: Renderer, reference: tuple[Rendering, OcrPage]
) -> None:
    moved = (replace(BLOCKS[0], left=360, top=320), *BLOCKS[1:])
    same = values(await against(chromium, reference, page(BLOCKS)))
    scores = values(await against(chromium, reference, page(moved)))
    assert scores["position"] <= 0.95 < same["position"]
    assert scores["text"] >= same["text"] - 0.02


async def test_a_deleted_block_lowers_block_match(
    chromium: Renderer, reference: tuple[Rendering, OcrPage]
) -> None:
    same = values(await against(chromium, reference, page(BLOCKS)))
    scores = values(await against(chromium, reference, page(BLOCKS[1:])))
    assert scores["block_match"] <= 0.93 < same["block_match"]


async def test_a_blank_page_scores_zero_on_blocks(
    chromium: Renderer, reference: tuple[Rendering, OcrPage]
) -> None:
    scores = values(await against(chromium, reference, "<!doctype html><html><body></body></html>"))
    assert [scores[m] for m in ("block_match", "text", "position", "color")] == [0, 0, 0, 0]
    assert scores["visual"] <= 0.8


class _FailsFirstScreenshot(Renderer):
    """A renderer whose first screenshot fails as Chromium's sometimes does under load."""

    attempts = 0

    async def _render(self, html: str, viewport: Viewport, accessibility: bool) -> Rendering:
        self.attempts += 1
        if self.attempts == 1:
            raise _ScreenshotFailed("Protocol error (Page.captureScreenshot): Unable to capture")
        return await super()._render(html, viewport, accessibility)


async def test_a_failed_screenshot_is_rendered_again_in_a_fresh_context(
    chromium: Renderer,
) -> None:
    retrying = _FailsFirstScreenshot(chromium._browser, None)

    rendering = await retrying.render(page(BLOCKS), VIEWPORT)

    assert retrying.attempts == 2
    assert rendering.page is not None
    assert rendering.png.startswith(b"\x89PNG")
