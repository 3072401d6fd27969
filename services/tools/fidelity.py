"""The tool workers' fidelity score: a page rendered at a screenshot's width, scored
against it by the shared scoring code (services/fidelity, docs/eval.md).

The render goes through the previews' Screenshotter: the same browser slots, offline
routing of CDN runtimes, egress proxy, load and pixel limits. The screenshot is decoded
within the process's image budget and read by OCR once per image, and an identical page
is scored once (score_cache.py): every option and round of a generation scores against
the same screenshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from services.common.accessibility import A11yReport
from services.common.images import ImageDecoder, ImageRefused
from services.common.input_images import InputImage
from services.common.project_paths import is_html, path_problem
from services.common.tool_types import FileState
from services.fidelity.accessibility import AxeScript, report_from_js
from services.fidelity.dom import EXTRACT_JS, words_from_js
from services.fidelity.metrics import Scores
from services.fidelity.ocr import OcrError, OcrPage, ocr_page, tesseract_available
from services.fidelity.regions import Region, side_by_side, worst_regions
from services.fidelity.score import MAX_BLOCKS, PngScore, png_size, score_png
from services.fidelity.stop import Stop, Stopped
from services.tools.preview_tool import project_html
from services.tools.score_cache import MAX_READINGS, MAX_SCORES, KeptResults
from services.tools.screenshot import Screenshotter

log = logging.getLogger(__name__)

MIN_WIDTH = 200
MAX_WIDTH = 4096
# The viewport's height is the screenshot's (a window capture is then reproduced exactly:
# `vh` units, a page shorter than the window), up to this: a taller screenshot is a
# full-page capture, whose window was likely no taller than this.
MIN_HEIGHT = 200
MAX_VIEWPORT_HEIGHT = 1200

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class FidelityOutcome:
    image_index: int
    viewport_width: int
    scores: Scores | None = None
    unavailable_reason: str = ""
    regions: tuple[Region, ...] = ()
    comparison_png: bytes = b""
    path: str = ""  # the project file scored; empty: the entry page
    note: str = ""  # what the score left out (a page over the match's bound)
    # The accessibility check in the same render, when asked and the page rendered.
    accessibility: A11yReport | None = None


@dataclass(frozen=True)
class _Reference:
    """A decoded screenshot and its OCR (kept per image hash: score_cache.py)."""

    png: bytes
    ocr: OcrPage


class ScoringError(Exception):
    """Bad input (the caller's fault): no code, an unreadable image."""


class FidelityScorer:
    def __init__(
        self,
        screenshotter: Screenshotter | None,
        images: ImageDecoder,
        *,
        max_blocks: int = MAX_BLOCKS,
        axe: AxeScript | None = None,
    ) -> None:
        self._screenshotter = screenshotter
        self._axe = axe
        self._images = images
        self._max_blocks = max_blocks
        # OCR and the metrics take a core each while they run: as many at once as the
        # browser renders at once, so scores cannot crowd out the previews' CPU.
        captures = screenshotter.settings.max_concurrent_captures if screenshotter else 1
        self._cpu_slots = asyncio.Semaphore(max(1, captures))
        # Each screenshot read once, each page scored once (score_cache.py).
        self._readings: KeptResults[_Reference] = KeptResults(MAX_READINGS)
        self._scores: KeptResults[FidelityOutcome] = KeptResults(MAX_SCORES)

    def available(self) -> str:
        """Why this worker cannot score (empty when it can)."""
        if self._screenshotter is None:
            return "screenshots are turned off on the tool worker"
        if not tesseract_available():
            return "tesseract is not installed on the tool worker"
        return ""

    async def score_page(
        self,
        page: FileState,
        files: tuple[FileState, ...],
        image: InputImage,
        *,
        image_index: int,
        width: int,
        timeout_s: float,
        with_regions: bool = False,
        owner: str = "",
        accessibility: bool = False,
    ) -> FidelityOutcome:
        """Scores `page` of a project of `files` as it renders (its own .css/.js inlined,
        as screenshot_preview shows it); the outcome names the page. `owner` (a
        generation) shares the score renders fairly with other owners."""
        problem = path_problem(page.path) or (None if is_html(page.path) else "not an HTML page")
        if problem is not None:
            raise ScoringError(f"path: {problem}")
        outcome = await self.score(
            await project_html(page, files),
            image,
            image_index=image_index,
            width=width,
            timeout_s=timeout_s,
            with_regions=with_regions,
            owner=owner,
            accessibility=accessibility,
        )
        return replace(outcome, path=page.path)

    async def score(
        self,
        code: str,
        image: InputImage,
        *,
        image_index: int,
        width: int,
        timeout_s: float,
        with_regions: bool = False,
        owner: str = "",
        accessibility: bool = False,
    ) -> FidelityOutcome:
        if not code.strip():
            raise ScoringError("code: empty")
        if width and not MIN_WIDTH <= width <= MAX_WIDTH:
            raise ScoringError(f"viewport_width: must be 0 or {MIN_WIDTH}-{MAX_WIDTH}")
        # The whole score's limit: its work in threads checks it (`Stop`) and ends there.
        stop = Stop(time.monotonic() + timeout_s)

        async def compute() -> FidelityOutcome:
            try:
                return await self._score(code, image, width, stop, with_regions, owner, after)
            except Stopped:
                reason = f"not scored within its limit of {timeout_s:g} s"
                return FidelityOutcome(0, width, unavailable_reason=reason)

        # An identical page against the same screenshot at the same width scores the same.
        after = self._axe.expression if accessibility and self._axe is not None else ""
        key = (hashlib.sha256(code.encode()).hexdigest(), image.sha256, width, with_regions, after)
        outcome = await self._scores.get(key, compute, lambda scored: scored.scores is not None)
        return replace(outcome, image_index=image_index)

    async def _score(
        self,
        code: str,
        image: InputImage,
        width: int,
        stop: Stop,
        with_regions: bool,
        owner: str,
        after: str = "",
    ) -> FidelityOutcome:
        image_index = 0  # the caller's is set on the (kept) outcome

        async def read() -> _Reference:
            async with self._cpu_slots:
                return await _in_thread(stop, lambda: self._read(image.data, stop))

        try:
            reference = await self._readings.get(image.sha256, read, lambda _: True)
        except ImageRefused as exc:
            raise ScoringError(f"image: {exc}") from None
        except OcrError as exc:
            return FidelityOutcome(image_index, width, unavailable_reason=str(exc))
        ref_width, ref_height = reference.ocr.page.width, reference.ocr.page.height
        width = width or min(max(int(ref_width), MIN_WIDTH), MAX_WIDTH)
        # At another width than the screenshot's, its height scales with it.
        height = round(ref_height * width / max(ref_width, 1.0))
        height = min(max(height, MIN_HEIGHT), MAX_VIEWPORT_HEIGHT)
        unavailable = self.available()
        if unavailable or self._screenshotter is None:
            return FidelityOutcome(image_index, width, unavailable_reason=unavailable)
        checked: list[A11yReport] = []

        async def check(page: Page) -> None:
            # A page that breaks axe-core loses its check, never its fidelity score.
            try:
                checked.append(report_from_js(await page.evaluate(after), width))
            except PlaywrightError as exc:
                reason = f"axe-core failed: {exc.message.splitlines()[0][:200]}"
                checked.append(A11yReport(width, unavailable_reason=reason))

        try:
            png, data = await self._screenshotter.render_for_score(
                code,
                width,
                height,
                EXTRACT_JS,
                timeout_s=_remaining(stop),
                owner=owner,
                # A kept page serves only the same generation's renders of this screenshot.
                keep_for=f"{owner}/{image.sha256}",
                then=check if after else None,
            )
        except Exception as exc:  # any failed render is "unavailable", never a zero
            log.info("fidelity render failed", extra={"reason": str(exc)[:200]})
            reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            return FidelityOutcome(image_index, width, unavailable_reason=f"no render: {reason}")
        a11y = checked[0] if checked else None
        async with self._cpu_slots:
            result = await _in_thread(
                stop, lambda: _score(reference, data, png, self._max_blocks, stop)
            )
            if result.note:
                log.info("fidelity match bounded", extra={"note": result.note})
            if not with_regions:
                return FidelityOutcome(
                    image_index, width, result.scores, note=result.note, accessibility=a11y
                )
            comparison = await _in_thread(stop, lambda: side_by_side(reference.png, png))
        return FidelityOutcome(
            image_index,
            width,
            result.scores,
            regions=tuple(worst_regions(result)),
            comparison_png=comparison,
            note=result.note,
            accessibility=a11y,
        )

    def _read(self, data: bytes, stop: Stop) -> _Reference:
        with self._images.open(data, flatten=True, upright=True) as decoded:
            out = io.BytesIO()
            decoded.save(out, format="PNG")
        png = out.getvalue()
        return _Reference(png, ocr_page(png, stop=stop))


def _score(reference: _Reference, data: Any, png: bytes, max_blocks: int, stop: Stop) -> PngScore:
    # OCR sees only what the (height-limited) screenshot shows; so does the comparison.
    words = words_from_js(data, png_size(png)[1])
    return score_png(reference.ocr, reference.png, words, png, max_blocks=max_blocks, stop=stop)


def _remaining(stop: Stop) -> float:
    return max(0.0, stop.deadline - time.monotonic())


async def _in_thread(stop: Stop, work: Callable[[], R]) -> R:
    """`work()` in a thread. Cancelled, it sets `stop` and waits for the thread to end (the
    work checks `stop` every few milliseconds) before it lets the cancellation go on: the
    caller's slot is freed only once the work has stopped, and no CPU is spent after."""
    future = asyncio.ensure_future(asyncio.to_thread(work))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        stop.set()
        while not future.done():
            with contextlib.suppress(asyncio.CancelledError):  # raised below, after the wait
                await asyncio.wait({future})
        if not future.cancelled():
            future.exception()  # retrieved: Stopped, as asked
        raise
