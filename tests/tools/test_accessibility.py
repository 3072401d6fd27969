"""axe-core in the tool worker's browser (docs/accessibility.md): scripted pages with
known violations each reported by their axe rule id, a clean page reports none, nothing
reaches the network, and one render serves both the fidelity score and the check."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Page

from services.common.images import ImageDecoder, ImageLimits
from services.common.input_images import parse_input_image
from services.common.tool_types import FileState
from services.common.vendor import DEFAULT_VENDOR_DIR, VendorCatalog
from services.fidelity.accessibility import AxeScript, report_from_js, score_of
from services.tools.accessibility_tool import accessibility_handler
from services.tools.fidelity import FidelityScorer
from services.tools.screenshot import ScreenshotSettings, Screenshotter
from services.tools.types import ToolContext

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHROMIUM = "/usr/bin/chromium"
HEAD = '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>T</title></head>'
CLEAN = (
    HEAD + "<body><header><h1>Plans</h1></header><main>"
    '<p style="color:#222;background:#fff">Pick a plan.</p>'
    '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt="A chart">'
    '<label>Email <input type="email" name="email"></label>'
    '<button type="button" aria-label="Close"><svg aria-hidden="true" width="8" height="8">'
    "</svg></button></main></body></html>"
)
# One known violation per page, with axe's rule id for it.
BROKEN = {
    "color-contrast": '<p style="color:#bbb;background:#fff">Light grey words</p>',
    "image-alt": '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">',
    "label": '<input type="text" name="q">',
    "button-name": '<button type="button"><svg width="8" height="8"></svg></button>',
}


def broken(snippet: str) -> str:
    return HEAD + f"<body><main><h1>Page</h1>{snippet}</main></body></html>"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shooter() -> AsyncIterator[Screenshotter]:
    async def offline(host: str, port: int) -> Sequence[str]:  # a lookup fails the test
        raise AssertionError(f"network: {host}:{port}")

    shooter = Screenshotter(
        ScreenshotSettings(chromium_path=CHROMIUM),
        resolver=offline,
        vendor=VendorCatalog.load(DEFAULT_VENDOR_DIR),
    )
    assert await shooter.probe(), f"Chromium did not launch from {CHROMIUM}"
    yield shooter
    await shooter.close()


@pytest.fixture(scope="module")
def axe() -> AxeScript:
    script = AxeScript(VendorCatalog.load(DEFAULT_VENDOR_DIR))
    assert not script.unavailable
    return script


async def check(
    shooter: Screenshotter, axe: AxeScript, html: str, width: int = 1000, owner: str = ""
) -> Any:
    answers: list[Any] = []

    async def run_axe(page: Page) -> None:
        answers.append(await page.evaluate(axe.expression))

    await shooter.render_for_score(
        html, width, 600, "() => 0", timeout_s=30, owner=owner, then=run_axe
    )
    return report_from_js(answers[0], width)


async def test_each_known_violation_is_reported_by_its_rule_id(
    shooter: Screenshotter, axe: AxeScript
) -> None:
    # Each page its own owner: the score renders run side by side (one per owner).
    reports = await asyncio.gather(
        *(check(shooter, axe, broken(snippet), owner=rule) for rule, snippet in BROKEN.items())
    )
    for rule, report in zip(BROKEN, reports, strict=True):
        assert [v.rule_id for v in report.violations] == [rule], report
        [violation] = report.violations
        assert violation.impact in ("serious", "critical")
        assert violation.node_count == 1
        assert violation.nodes[0].html.startswith("<")
        assert violation.nodes[0].selector
        assert report.score == score_of(report.violations) < 1
        assert report.engine == "axe-core 4.14.1"


async def test_a_clean_page_reports_none_at_both_widths(
    shooter: Screenshotter, axe: AxeScript
) -> None:
    widths = (1400, 390)
    reports = await asyncio.gather(*(check(shooter, axe, CLEAN, w, owner=str(w)) for w in widths))
    for report in reports:
        assert report.violations == ()
        assert report.score == 1.0
        assert report.rules_passed > 5
        assert not report.unavailable_reason


async def test_one_render_serves_the_fidelity_score_and_the_check(
    shooter: Screenshotter, axe: AxeScript, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = broken(BROKEN["image-alt"] + "<p>Pricing for teams</p>")
    png, _ = await shooter.render_for_score(page, 800, 600, "() => 0", timeout_s=30)
    image = parse_input_image("data:image/png;base64," + base64.b64encode(png).decode())
    scorer = FidelityScorer(shooter, ImageDecoder(ImageLimits()), axe=axe)
    renders: list[str] = []
    real = shooter.render_for_score

    async def counted(*args: Any, **kwargs: Any) -> Any:
        renders.append("checked" if kwargs.get("then") else "")
        return await real(*args, **kwargs)

    monkeypatch.setattr(shooter, "render_for_score", counted)
    outcome = await scorer.score(
        page, image, image_index=0, width=800, timeout_s=60, accessibility=True
    )
    assert renders == ["checked"]
    assert outcome.scores is not None
    assert outcome.scores.text is not None
    assert outcome.scores.text > 0.9
    assert outcome.accessibility is not None
    assert [v.rule_id for v in outcome.accessibility.violations] == ["image-alt"]


async def test_the_tool_returns_the_violations(shooter: Screenshotter, axe: AxeScript) -> None:
    handler = accessibility_handler(shooter, axe, 30.0)
    page = FileState("index.html", broken(BROKEN["label"]))
    outcome = await handler({"viewport_width": 390}, page, ToolContext(files=(page,)))
    assert outcome.ok
    details = outcome.result["details"]
    assert details["viewport_width"] == 390
    assert details["page"] == "index.html"
    assert [v["rule_id"] for v in details["violations"]] == ["label"]
    assert details["violations"][0]["nodes"][0]["html"].startswith("<input")
    refused = await handler({"viewport_width": 5}, page, ToolContext(files=(page,)))
    assert not refused.ok
    assert "viewport_width" in refused.result["error"]
