"""The `screenshot_preview` tool over the worker's browser (screenshot.py): the captures go
to the model as image parts and to the UI as inline data URLs."""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any
from urllib.parse import quote, unquote, urljoin, urlsplit

from services.common.markup import (
    RawText,
    Tag,
    attribute_values,
    attributes,
    escaped_body,
    scan_markup,
)
from services.common.project_paths import ENTRY_PATH, is_html
from services.common.react_project import BUILT_PATH, ProjectBuild
from services.common.tool_types import FileState, MediaPart
from services.tools.screenshot import Screenshotter
from services.tools.types import ToolContext, ToolHandler, ToolOutcome, failure
from services.tools.viewports import VIEWPORTS, Capture, width_viewport

log = logging.getLogger(__name__)

RESULT_CONTENT = "Full-page desktop and mobile screenshots of the current preview are attached."
# Where a page's relative links are resolved, to see which name a project file.
_ORIGIN = "project.invalid"


async def page_to_render(
    file: FileState, files: tuple[FileState, ...], build: ProjectBuild = "none"
) -> tuple[FileState, str]:
    """The page a capture shows and its HTML to render (`shown_page`, `project_html`)."""
    page = shown_page(file, files, build)
    return page, await project_html(page, files)


async def project_html(page: FileState, files: tuple[FileState, ...]) -> str:
    """`inline_project` in a thread: a project of megabytes must not hold the event loop
    (every preview and every score renders one)."""
    return await asyncio.to_thread(inline_project, page, files)


def shown_page(
    file: FileState, files: tuple[FileState, ...], build: ProjectBuild = "none"
) -> FileState:
    """The current file, or the entry page when the current file is a stylesheet or script;
    on a built project, its last good build's page whatever the current file."""
    built = next((f for f in files if f.path == BUILT_PATH), None) if build != "none" else None
    if built is not None:
        return built
    if is_html(file.path):
        return file
    html_files = [f for f in files if is_html(f.path)]
    entry = [f for f in html_files if f.path == ENTRY_PATH] or html_files
    return entry[0] if entry else file


def inline_project(page: FileState, files: tuple[FileState, ...]) -> str:
    """`page`'s HTML with the project's own .css/.js inlined: the page is rendered from a
    string, where a relative link would load nothing. `<link rel=stylesheet href>` becomes
    `<style>`, an empty `<script src>…</script>` a script with the file as its body.

    Linear in the page: its tags come from one scan (services.common.markup), never from a
    backtracking regex, which took 50 s on 15 KB of `<link rel=stylesheet ` (issue 35)."""
    project = {f.path: f.content for f in files}
    page_url = f"https://{_ORIGIN}/{quote(page.path)}"
    code = page.content

    def local(href: str | None) -> str | None:
        # Resolved as the browser resolves it from the page's folder (`../`, `./`, `/`,
        # a query); another host is not the project's.
        if href is None:
            return None
        try:
            url = urlsplit(urljoin(page_url, href.strip()))
        except ValueError:  # not a URL (`http://[x`): a browser loads nothing either
            return None
        return project.get(unquote(url.path)[1:]) if url.netloc == _ORIGIN else None

    pieces: list[str] = []
    done = 0
    for token in scan_markup(code):
        if isinstance(token, Tag) and token.name.lower() == "link":
            found = attributes(code, token)
            values = attribute_values(found)
            css = local(values.get("href"))
            if css is None or "stylesheet" not in values.get("rel", "").lower().split():
                continue
            pieces += [code[done : token.start], f"<style>{escaped_body(css, 'style')}</style>"]
            done = token.end
        elif isinstance(token, RawText) and token.name == "script":
            found = attributes(code, token)
            js = local(attribute_values(found).get("src"))
            if js is None or code[token.body_start : token.end].strip():
                continue
            kept = " ".join(a.group(0) for a in found if a.group("name").lower() != "src")
            opening = f"<script {kept}>" if kept else "<script>"
            pieces += [code[done : token.start], opening, escaped_body(js, "script"), "</script>"]
            done = code.index(">", token.end) + 1  # past the closing tag
    return "".join([*pieces, code[done:]]) if pieces else code


def screenshot_preview_handler(shooter: Screenshotter) -> ToolHandler:
    """The `screenshot_preview` tool; its arguments are ignored (the schema has none)."""

    async def screenshot_preview(
        arguments: dict[str, Any], file: FileState | None, context: ToolContext
    ) -> ToolOutcome:
        if file is None:
            return failure("No file exists yet. Call create_file first.", "No file to screenshot")
        if context.build != "none" and all(f.path != BUILT_PATH for f in context.files):
            return failure(
                "The project has not built yet: fix the errors the last create_file or "
                "edit_file reported, then take the screenshot.",
                "Nothing built yet",
            )
        page, html = await page_to_render(file, context.files, context.build)
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
