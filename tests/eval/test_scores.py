"""The metrics on real renders: a page against itself, and controlled perturbations.

Each perturbation must lower the metric(s) it is about, by the amount stated, and leave
the other block metrics at ≥ 0.99. `visual` is the whole-page image score: every visible
change lowers it a little, so for the block perturbations the test asserts only that it
does not rise; the blank page is where it must fall.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

import pytest
import pytest_asyncio
from aiohttp import web
from PIL import Image

from services.common.vendor import DEFAULT_VENDOR_DIR, VendorCatalog
from services.eval.render import Renderer, Viewport, renderer
from services.eval.sets import load_set
from services.fidelity.metrics import PageBlocks, Scores, score
from tests.offline_pages import REACT_PAGE, RED, tailwind_page

pytestmark = pytest.mark.asyncio(loop_scope="module")
VIEWPORT = Viewport(1000, 700)


@dataclass(frozen=True)
class Spec:
    text: str
    left: int
    top: int
    color: str = "#1f2937"


BLOCKS = (
    Spec("Fresh bread every morning", 60, 120),
    Spec("Baked in small batches since 1987", 60, 180),
    Spec("Order before noon for delivery today", 520, 300),
    Spec("Our bakers start at four", 60, 420),
    Spec("Visit the shop on Rua Augusta", 520, 560),
)


def page(blocks: tuple[Spec, ...]) -> str:
    """Absolutely placed blocks on a fixed-size page: removing or moving one reflows none."""
    divs = "".join(
        f'<div style="position:absolute;left:{b.left}px;top:{b.top}px;color:{b.color}">'
        f"{b.text}</div>"
        for b in blocks
    )
    return (
        '<!doctype html><html><body style="margin:0;font:22px system-ui,sans-serif">'
        '<div style="position:relative;width:1000px;height:700px;background:#fff7ed">'
        '<div style="position:absolute;left:0;top:0;width:1000px;height:80px;'
        'background:#9a3412"></div>'
        '<div style="position:absolute;left:480px;top:260px;width:460px;height:380px;'
        f'background:#fed7aa;border-radius:16px"></div>{divs}</div></body></html>'
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chromium() -> AsyncIterator[Renderer]:
    async with renderer(VendorCatalog.load(DEFAULT_VENDOR_DIR)) as r:
        yield r


async def compare(chromium: Renderer, ref_html: str, cand_html: str) -> Scores:
    ref = await chromium.render(ref_html, VIEWPORT)
    cand = await chromium.render(cand_html, VIEWPORT)
    return score(ref.page, ref.png, cand.page, cand.png)


def assert_unchanged(scores: Scores, *names: str) -> None:
    for name in names:
        value = getattr(scores, name)
        assert value is not None
        assert value >= 0.99, f"{name} moved: {scores}"


async def test_every_shipped_page_scores_at_least_099_against_itself(
    chromium: Renderer,
) -> None:
    shipped = load_set("basic")
    assert 12 <= len(shipped.items) <= 20
    for ref in shipped.items:
        if not ref.is_html:
            png = ref.path.read_bytes()
            assert score(None, png, PageBlocks((), 0, 0), png).visual >= 0.99
            continue
        html = ref.path.read_text(encoding="utf-8")
        a = await chromium.render(html, ref.viewport)
        b = await chromium.render(html, ref.viewport)
        assert a.page is not None
        assert len(a.page.blocks) >= 5, f"{ref.id} has too little text to score"
        scores = score(a.page, a.png, b.page, b.png)
        assert_unchanged(scores, "block_match", "text", "position", "color", "visual")


async def test_changed_text_colors_lower_color_only(chromium: Renderer) -> None:
    red = tuple(replace(b, color="#dc2626") for b in BLOCKS)
    scores = await compare(chromium, page(BLOCKS), page(red))
    # Dark grey → red is about 50 CIEDE2000 units: color ≈ 0.5.
    assert scores.color is not None
    assert scores.color <= 0.6
    assert_unchanged(scores, "block_match", "text", "position")
    assert scores.visual <= 1.0


async def test_changed_words_lower_text_only(chromium: Renderer) -> None:
    swaps = {"bread": "cakes", "small": "large", "noon": "ten", "four": "five", "shop": "cafe"}
    reworded = tuple(
        replace(b, text=" ".join(swaps.get(w, w) for w in b.text.split())) for b in BLOCKS
    )
    scores = await compare(chromium, page(BLOCKS), page(reworded))
    # One word in five or six changed per block: text similarity ≈ 0.85-0.9.
    assert scores.text is not None
    assert scores.text <= 0.93
    assert_unchanged(scores, "block_match", "color")
    # A different word is a different width, so a left-aligned block's centre moves by
    # half the difference: a few pixels on a 1000 px page.
    assert scores.position is not None
    assert scores.position >= 0.98


async def test_a_moved_block_lowers_position_only(chromium: Renderer) -> None:
    moved = (replace(BLOCKS[0], left=360, top=320), *BLOCKS[1:])
    scores = await compare(chromium, page(BLOCKS), page(moved))
    # One block of five moved 300 px right (0.3 of the width) and 200 down (0.29 of the
    # height): the mean drops by 0.3 / 5 = 0.06.
    assert scores.position is not None
    assert 0.92 <= scores.position <= 0.95
    assert_unchanged(scores, "block_match", "text", "color")


async def test_a_deleted_block_lowers_block_match_only(chromium: Renderer) -> None:
    scores = await compare(chromium, page(BLOCKS), page(BLOCKS[1:]))
    # The deleted block is about a sixth of the reference's text area, counted once
    # (the candidate has nothing to match it): block-match ≈ 0.9.
    assert scores.block_match is not None
    assert scores.block_match <= 0.93
    assert_unchanged(scores, "text", "position", "color")


async def test_a_blank_page_scores_zero_on_blocks_and_low_on_visual(
    chromium: Renderer,
) -> None:
    scores = await compare(chromium, page(BLOCKS), "<!doctype html><html><body></body></html>")
    assert (scores.block_match, scores.text, scores.position, scores.color) == (0, 0, 0, 0)
    # SSIM credits flat areas that agree, and a blank white page agrees with this one's
    # light background (docs/eval.md): about 0.7, where the page itself scores 1.
    assert scores.visual <= 0.8


async def test_renders_make_no_network_requests(chromium: Renderer) -> None:
    hits: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(text="body { color: red }", content_type="text/css")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        html = (
            f'<link rel="stylesheet" href="http://127.0.0.1:{port}/x.css">'
            f'<img src="http://127.0.0.1:{port}/y.png"><p>offline</p>'
        )
        rendering = await chromium.render(html, VIEWPORT)
    finally:
        await runner.cleanup()
    assert hits == []
    assert rendering.page is not None
    assert [b.text for b in rendering.page.blocks] == ["offline"]
    assert rendering.page.blocks[0].color == (0, 0, 0)


@pytest.mark.parametrize("html", [tailwind_page(), REACT_PAGE], ids=["tailwind", "react"])
async def test_cdn_stacks_render_offline(chromium: Renderer, html: str) -> None:
    # Eval refuses every request but the vendored CDN copies: the runtime ran offline.
    rendering = await chromium.render(html, VIEWPORT)
    image = Image.open(io.BytesIO(rendering.png)).convert("RGB")
    assert image.getpixel((5, 5)) == RED
    assert rendering.page is not None
    text = " ".join(block.text for block in rendering.page.blocks)
    assert text.startswith(("Offline and red", "React mounted 3 times"))
    # The text is white on red: a block's colour, as the color metric reads it.
    assert rendering.page.blocks[0].color == (255, 255, 255)
