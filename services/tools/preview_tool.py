"""The `screenshot_preview` tool over the worker's browser (screenshot.py): the captures go
to the model as image parts and to the UI as inline data URLs."""

from __future__ import annotations

import base64
import logging
from typing import Any

from services.common.tool_types import FileState, MediaPart
from services.tools.screenshot import Capture, Screenshotter
from services.tools.types import ToolContext, ToolHandler, ToolOutcome, failure

log = logging.getLogger(__name__)

RESULT_CONTENT = "Full-page desktop and mobile screenshots of the current preview are attached."


def screenshot_preview_handler(shooter: Screenshotter) -> ToolHandler:
    """The `screenshot_preview` tool; its arguments are ignored (the schema has none)."""

    async def screenshot_preview(
        arguments: dict[str, Any], file: FileState | None, context: ToolContext
    ) -> ToolOutcome:
        if file is None:
            return failure("No file exists yet. Call create_file first.", "No file to screenshot")
        try:
            captures = await shooter.capture(file.content)
        except Exception as exc:
            log.warning("screenshot_preview failed", exc_info=True)
            return failure(f"Screenshot failed: {exc}", "Screenshot failed")
        return preview_outcome(captures)

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
