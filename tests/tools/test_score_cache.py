"""A score cheap enough for every round (issue 36): the scorer reads a screenshot once and
scores an identical page once; a failed computation is not kept."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest
from PIL import Image, ImageDraw

from services.common.images import ImageDecoder, ImageLimits
from services.common.input_images import InputImage
from services.tools.fidelity import FidelityScorer
from services.tools.score_cache import KeptResults
from services.tools.screenshot import ScreenshotSettings


def _png() -> bytes:
    image = Image.new("RGB", (400, 200), "white")
    ImageDraw.Draw(image).text((20, 80), "Fresh bread every morning", fill="black")
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


class _Renderer:
    """Stands in for the browser: every page renders as the screenshot, with no words."""

    settings = ScreenshotSettings()

    def __init__(self, png: bytes) -> None:
        self.png = png
        self.rendered: list[str] = []

    async def render_for_score(self, html: str, *_: Any, **__: Any) -> tuple[bytes, Any]:
        self.rendered.append(html)
        return self.png, {"words": []}


class _CountingDecoder(ImageDecoder):
    opened = 0

    def open(self, *args: Any, **kwargs: Any) -> Any:
        self.opened += 1
        return super().open(*args, **kwargs)


async def test_identical_pages_are_scored_once_and_the_screenshot_read_once() -> None:
    png = _png()
    renderer, decoder = _Renderer(png), _CountingDecoder(ImageLimits())
    scorer = FidelityScorer(renderer, decoder)  # type: ignore[arg-type]
    image = InputImage.of("image/png", png)

    async def score(page: str, index: int) -> Any:
        return await scorer.score(page, image, image_index=index, width=0, timeout_s=10)

    same = await asyncio.gather(*(score("<p>a</p>", i) for i in range(4)))
    assert renderer.rendered == ["<p>a</p>"]
    assert [o.image_index for o in same] == [0, 1, 2, 3]
    assert len({o.scores for o in same}) == 1
    assert same[0].scores is not None
    # Another option's page renders; the screenshot is not decoded or read again.
    await score("<p>b</p>", 0)
    assert renderer.rendered == ["<p>a</p>", "<p>b</p>"]
    assert decoder.opened == 1


async def test_a_failed_or_refused_result_is_computed_again() -> None:
    kept: KeptResults[int] = KeptResults(2)
    calls: list[str] = []

    async def fail() -> int:
        calls.append("fail")
        raise RuntimeError("render failed")

    async def refused() -> int:
        calls.append("refused")
        return -1

    async def fine() -> int:
        calls.append("fine")
        return 7

    with pytest.raises(RuntimeError):
        await kept.get("k", fail, lambda v: v >= 0)
    assert await kept.get("k", refused, lambda v: v >= 0) == -1
    assert await kept.get("k", fine, lambda v: v >= 0) == 7
    assert await kept.get("k", fail, lambda v: v >= 0) == 7
    assert calls == ["fail", "refused", "fine"]
    # Bounded: the least recently used goes first.
    await kept.get("j", fine, lambda v: True)
    await kept.get("i", fine, lambda v: True)
    assert len(kept) == 2
