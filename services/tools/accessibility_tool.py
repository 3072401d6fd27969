"""The `check_accessibility` tool: the current page rendered at a width and checked by
axe-core (accessibility.py), so the model can fix the violations it lists."""

from __future__ import annotations

from typing import Any

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
            # The width the page's screenshot was taken at, as the live check uses.
            tagged = (t.viewport_width for t in context.image_tags if t.path in ("", page.path))
            width = next((w for w in tagged if w), DEFAULT_WIDTH)
        width = int(width)
        if not MIN_WIDTH <= width <= MAX_WIDTH:
            message = f"viewport_width must be between {MIN_WIDTH} and {MAX_WIDTH}; got {width}."
            return failure(message, "Bad width")
        try:
            render = await screenshotter.render_scored(
                html,
                width,
                HEIGHT,
                "() => 0",
                timeout_s=timeout_s,
                owner=context.owner,
                after=axe.expression,
            )
        except ScreenshotError as exc:
            return failure(f"The page could not be rendered: {exc}", "Not rendered")
        report = report_from_js(render.after_data, width, page.path)
        if report.unavailable_reason:
            return failure(report.unavailable_reason, "Not checked")
        details = report_json(report)
        summary = {**details, "status": "ok"}
        return ToolOutcome(True, {"content": RESULT_CONTENT, "details": details}, summary)

    return check_accessibility
