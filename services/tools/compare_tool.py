"""The `compare_with_reference` tool: the current page scored against an input screenshot
(services/tools/fidelity.py), with the regions that differ most and a side-by-side image,
so the model fixes what differs rather than guessing from its own screenshot alone."""

from __future__ import annotations

import base64
from typing import Any

from services.common.project_paths import ENTRY_PATH
from services.common.tool_types import FileState, MediaPart
from services.tools.fidelity import FidelityOutcome, FidelityScorer, ScoringError
from services.tools.preview_tool import shown_page
from services.tools.types import ToolContext, ToolHandler, ToolOutcome, failure

NAME = "compare_with_reference"
IMAGE_NAME = "comparison.png"
RESULT_CONTENT = (
    "Scores of the current page against the screenshot (1 = the same; docs/eval.md), the "
    "screenshot's text blocks the page matches worst (boxes in the screenshot's pixels), and "
    "an attached image: the screenshot on the left, the page on the right."
)


def compare_handler(scorer: FidelityScorer, timeout_s: float) -> ToolHandler:
    async def compare_with_reference(
        arguments: dict[str, Any], file: FileState | None, context: ToolContext
    ) -> ToolOutcome:
        if file is None:
            return failure("No file exists yet. Call create_file first.", "No file to compare")
        images = context.input_images
        page = shown_page(file, context.files, context.build)
        number = arguments.get("image_number")
        if number is None:
            own = (i for i, im in enumerate(images) if (im.tag.path or ENTRY_PATH) == page.path)
            number = next(own, 0) + 1
        number = int(number)
        if not images:
            return failure("This request has no input image to compare with.", "No image")
        if not 1 <= number <= len(images):
            message = f"image_number must be between 1 and {len(images)}; got {number}."
            return failure(message, "No such image")
        tag = images[number - 1].tag
        try:
            outcome = await scorer.score_page(
                page,
                context.files,
                images[number - 1],
                image_index=number - 1,
                width=tag.viewport_width,
                timeout_s=timeout_s,
                with_regions=True,
                owner=context.owner,
            )
        except ScoringError as exc:
            return failure(f"Cannot compare: {exc}", "Cannot compare")
        if outcome.scores is None:
            reason = outcome.unavailable_reason or "unknown"
            return failure(f"The page could not be scored: {reason}", "Not scored")
        return compare_outcome(outcome)

    return compare_with_reference


def compare_outcome(outcome: FidelityOutcome) -> ToolOutcome:
    assert outcome.scores is not None
    scores = {k: (None if v is None else round(v, 3)) for k, v in outcome.scores.as_dict().items()}
    regions = [
        {
            "box": {"x": r.x, "y": r.y, "width": r.width, "height": r.height},
            "issue": r.issue,
            "expected_text": r.expected_text,
            "actual_text": r.actual_text,
        }
        for r in outcome.regions
    ]
    details = {
        "image_number": outcome.image_index + 1,
        "page": outcome.path,
        "viewport_width": outcome.viewport_width,
        "scores": scores,
        "regions": regions,
        "image_part_index": 0,
        "image_display_name": IMAGE_NAME,
    }
    if outcome.note:
        details["note"] = outcome.note
    shown = "data:image/png;base64," + base64.b64encode(outcome.comparison_png).decode("ascii")
    return ToolOutcome(
        ok=True,
        result={"content": RESULT_CONTENT, "details": details},
        summary={**details, "image_url": shown, "status": "ok"},
        media=(MediaPart(IMAGE_NAME, "image/png", data=outcome.comparison_png),),
    )
