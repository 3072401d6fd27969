"""The `check_accessibility` tool: the current page rendered at a width and checked by
axe-core (accessibility.py), so the model can fix the violations it lists."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from services.common.tool_types import FileState
from services.fidelity.accessibility import AxeScript, report_from_js, report_json
from services.tools.preview_tool import page_to_render
from services.tools.screenshot import ScreenshotError, Screenshotter
from services.tools.types import ToolContext, ToolHandler, ToolOutcome, failure

NAME = "check_accessibility"
DEFAULT_WIDTH = 1280
MIN_WIDTH, MAX_WIDTH = 320, 1920
HEIGHT = 800
RESULT_CONTENT = (
    "WCAG 2.x A and AA violations axe-core found in the current page at this width (score "
    "1 = none; docs/accessibility.md): fix each, keeping the page's look."
)


def accessibility_handler(
    screenshotter: Screenshotter, axe: AxeScript, timeout_s: float
) -> ToolHandler:
    async def check_accessibility(
        arguments: dict[str, Any], file: FileState | None, context: ToolContext
    ) -> ToolOutcome:
        if file is None:
            return failure("No file exists yet. Call create_file first.", "No file to check")
        page, html = await page_to_render(file, context.files)
        width = arguments.get("viewport_width")
        if width is None:
            # The width the screenshots were taken at, as the live check renders (the
            # images themselves are not needed, so not fetched: worker.py).
            width = next((w for w in context.viewport_widths if w), DEFAULT_WIDTH)
        width = int(width)
        if not MIN_WIDTH <= width <= MAX_WIDTH:
            message = f"viewport_width must be between {MIN_WIDTH} and {MAX_WIDTH}; got {width}."
            return failure(message, "Bad width")
        answers: list[Any] = []

        async def check(rendered: Page) -> None:
            answers.append(await rendered.evaluate(axe.expression))

        try:
            # The score's render path (its slots, routing and limits), with the check only.
            await screenshotter.render_for_score(
                html, width, HEIGHT, "() => 0", timeout_s=timeout_s, owner=context.owner, then=check
            )
        except (ScreenshotError, PlaywrightError) as exc:
            return failure(f"The page could not be checked: {exc}", "Not checked")
        report = report_from_js(answers[0], width, page.path)
        if report.unavailable_reason:
            return failure(report.unavailable_reason, "Not checked")
        details = report_json(report)
        summary = {**details, "status": "ok"}
        return ToolOutcome(True, {"content": RESULT_CONTENT, "details": details}, summary)

    return check_accessibility
