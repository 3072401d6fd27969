"""A finished variant's live fidelity score: its page against each input screenshot, on
the tool workers (ScoreFidelity; docs/fidelity.md).

Each screenshot is compared with the page it shows at the width it was taken at (its
tag, pages.py): in a site of several pages `pricing.html` is scored against the pricing
screenshot, never the entry page against it; the project's own .css/.js go along, since
the page links them.
"""

from __future__ import annotations

import asyncio
import time

from services.agent.domain import FileState, VariantRecord
from services.agent.events import Fidelity
from services.agent.pages import ENTRY_PATH
from services.agent.tool_client import ToolServiceError
from services.agent.tooling import FidelityAnswer, FidelityClient
from services.common.input_images import InputImage

# A request's first images are scored; more would multiply renders for little news.
MAX_SCORED_IMAGES = 4


async def score_variant(
    client: FidelityClient,
    state: VariantRecord,
    images: tuple[InputImage, ...],
    *,
    limit_s: float,
    deadline: float,
    owner: str = "",
) -> tuple[Fidelity, ...]:
    """One score per input image (the first MAX_SCORED_IMAGES), each the metrics and the
    worst regions, or why there are none; waits at most `limit_s`, and never past
    `deadline` (monotonic)."""
    project = state.files or (FileState(ENTRY_PATH, state.code),)
    # With the regions: clients show where the page differs (the UI's overlay).
    answers = await score_project(
        client, project, images, limit_s=limit_s, deadline=deadline, owner=owner, with_regions=True
    )
    return tuple(a.fidelity for a in answers)


async def score_project(
    client: FidelityClient,
    project: tuple[FileState, ...],
    images: tuple[InputImage, ...],
    *,
    limit_s: float,
    deadline: float,
    owner: str = "",
    with_regions: bool = False,
) -> tuple[FidelityAnswer, ...]:
    """score_variant's answers for `project` (entry page first), with the worst regions
    and the side-by-side image when `with_regions` (refinement's turn, refine.py)."""
    limit_s = max(0.1, min(limit_s, deadline - time.monotonic()))
    entry = project[0]

    async def one(index: int, image: InputImage) -> FidelityAnswer:
        tag = image.tag
        path = tag.path or entry.path
        page = next((f for f in project if f.path == path), None)
        if page is None:
            reason = f"the variant wrote no {path}"
            return _unavailable(index, tag.viewport_width, reason, path)
        try:
            async with asyncio.timeout(limit_s):
                return await client.score_fidelity(
                    page.content,
                    image,
                    image_index=index,
                    timeout_s=limit_s,
                    with_regions=with_regions,
                    path=page.path,
                    files=tuple(f for f in project if f is not page),
                    viewport_width=tag.viewport_width,
                    owner=owner,
                )
        except TimeoutError:
            reason = f"not scored within {limit_s:g} s"
        except ToolServiceError as exc:
            reason = str(exc)
        return _unavailable(index, tag.viewport_width, reason, page.path)

    scored = images[:MAX_SCORED_IMAGES]
    return tuple(await asyncio.gather(*(one(i, image) for i, image in enumerate(scored))))


def _unavailable(index: int, width: int, reason: str, path: str) -> FidelityAnswer:
    return FidelityAnswer(Fidelity(index, width, unavailable_reason=reason, path=path))
