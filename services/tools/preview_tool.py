"""The `screenshot_preview` tool over the worker's browser (screenshot.py): the captures go
to the model as image parts and to the UI as inline data URLs."""

from __future__ import annotations

import base64
import logging
import re
from typing import Any

from services.common.project_paths import ENTRY_PATH, is_html
from services.common.tool_types import FileState, MediaPart
from services.tools.screenshot import Screenshotter
from services.tools.types import ToolContext, ToolHandler, ToolOutcome, failure
from services.tools.viewports import VIEWPORTS, Capture, width_viewport

log = logging.getLogger(__name__)

RESULT_CONTENT = "Full-page desktop and mobile screenshots of the current preview are attached."
# A page's own stylesheet and script links, by relative path (a project's shared files).
_STYLESHEET = re.compile(
    r"<link\b[^>]*\brel=[\"']?stylesheet[\"']?[^>]*\bhref=[\"']([^\"'>]+)[\"'][^>]*>", re.I
)
_SCRIPT = re.compile(r"<script\b([^>]*)\bsrc=[\"']([^\"'>]+)[\"']([^>]*)>\s*</script>", re.I)


def page_to_render(file: FileState, files: tuple[FileState, ...]) -> tuple[FileState, str]:
    """The page a capture shows and its HTML to render (`shown_page`, `inline_project`)."""
    page = shown_page(file, files)
    return page, inline_project(page, files)


def shown_page(file: FileState, files: tuple[FileState, ...]) -> FileState:
    """The current file, or the entry page when the current file is a stylesheet or script."""
    if is_html(file.path):
        return file
    html_files = [f for f in files if is_html(f.path)]
    entry = [f for f in html_files if f.path == ENTRY_PATH] or html_files
    return entry[0] if entry else file


def inline_project(page: FileState, files: tuple[FileState, ...]) -> str:
    """`page`'s HTML with the project's own .css/.js inlined: the page is rendered from a
    string, where a relative link would load nothing."""
    project = {f.path: f.content for f in files}
    base = page.path.rpartition("/")[0]

    def local(href: str) -> str | None:
        path = f"{base}/{href}" if base else href
        return project.get(path.removeprefix("./"))

    def style(match: re.Match[str]) -> str:
        css = local(match.group(1))
        return match.group(0) if css is None else f"<style>{css}</style>"

    def script(match: re.Match[str]) -> str:
        js = local(match.group(2))
        if js is None:
            return match.group(0)
        # A closing tag inside the script would end the inlined element early.
        body = js.replace("</script", "<\\/script")
        attributes = " ".join(f"{match.group(1)} {match.group(3)}".split())
        return f"<script{' ' if attributes else ''}{attributes}>{body}</script>"

    return _SCRIPT.sub(script, _STYLESHEET.sub(style, page.content))


def screenshot_preview_handler(shooter: Screenshotter) -> ToolHandler:
    """The `screenshot_preview` tool; its arguments are ignored (the schema has none)."""

    async def screenshot_preview(
        arguments: dict[str, Any], file: FileState | None, context: ToolContext
    ) -> ToolOutcome:
        if file is None:
            return failure("No file exists yet. Call create_file first.", "No file to screenshot")
        page, html = page_to_render(file, context.files)
        widths = context.viewport_widths
        viewports = tuple(width_viewport(w) for w in widths) if widths else VIEWPORTS
        try:
            captures = await shooter.capture(html, viewports=viewports, owner=context.owner)
        except Exception as exc:
            log.warning("screenshot_preview failed", exc_info=True)
            return failure(f"Screenshot failed: {exc}", "Screenshot failed")
        outcome = preview_outcome(captures)
        if widths or page.path != "index.html":
            shown = ", ".join(f"{w} px" for w in widths) if widths else "desktop and mobile"
            outcome.result["content"] = (
                f"Full-page screenshots of {page.path} at {shown} wide are attached, in that order."
            )
        return outcome

    return screenshot_preview


def preview_outcome(captures: list[Capture]) -> ToolOutcome:
    """Model result without URLs, UI summary with inline data URLs, one PNG part per capture."""
    details: list[dict[str, Any]] = []
    shown: list[dict[str, Any]] = []
    media: list[MediaPart] = []
    for index, shot in enumerate(captures):
        entry: dict[str, Any] = {
            "viewport": shot.viewport.name,
            "full_page": shot.full_page,
            "image_part_index": index,
            "image_display_name": shot.viewport.display_name,
            "image_bytes": len(shot.png),
        }
        details.append(entry)
        data_url = "data:image/png;base64," + base64.b64encode(shot.png).decode("ascii")
        shown.append({**entry, "image_url": data_url, "status": "ok"})
        media.append(MediaPart(shot.viewport.display_name, "image/png", data=shot.png))
    return ToolOutcome(
        ok=True,
        result={"content": RESULT_CONTENT, "details": {"screenshots": details}},
        summary={"screenshots": shown, "status": "ok"},
        media=tuple(media),
    )
