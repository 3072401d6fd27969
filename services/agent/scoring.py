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
from collections.abc import Callable
from dataclasses import replace

from services.agent.domain import FileState, VariantRecord
from services.agent.events import Accessibility, Fidelity
from services.agent.pages import ENTRY_PATH
from services.agent.tool_client import ToolServiceError
from services.agent.tooling import FidelityAnswer, FidelityClient
from services.common.input_images import InputImage
from services.common.react_project import BUILT_PATH

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
    on_accessibility: Callable[[Accessibility], None] | None = None,
) -> tuple[Fidelity, ...]:
    """One score per input image (the first MAX_SCORED_IMAGES), each the metrics and the
    worst regions, or why there are none; waits at most `limit_s`, and never past
    `deadline` (monotonic). With `on_accessibility`, the first score of each page and
    width also checks that render's accessibility (docs/accessibility.md) and hands the
    check to it."""
    project = state.files or (FileState(ENTRY_PATH, state.code),)
    # With the regions: clients show where the page differs (the UI's overlay).
    answers = await score_project(
        client,
        project,
        images,
        limit_s=limit_s,
        deadline=deadline,
        owner=owner,
        with_regions=True,
        on_accessibility=on_accessibility,
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
    on_accessibility: Callable[[Accessibility], None] | None = None,
) -> tuple[FidelityAnswer, ...]:
    """score_variant's answers for `project` (entry page first), with the worst regions
    and the side-by-side image when `with_regions` (refinement's turn, refine.py)."""
    limit_s = max(0.1, min(limit_s, deadline - time.monotonic()))
    entry = project[0]
    checked = _first_per_page_and_width(images, entry.path) if on_accessibility else frozenset()

    async def one(index: int, image: InputImage) -> FidelityAnswer:
        tag = image.tag
        path = tag.path or entry.path
        if entry.path == BUILT_PATH and path == ENTRY_PATH:
            # A built project's index.html is a source: the page it stands for is the build.
            path = BUILT_PATH
        page = next((f for f in project if f.path == path), None)
        if page is None:
            reason = f"the variant wrote no {path}"
            return _unavailable(index, tag.viewport_width, reason, path)
        check = index in checked
        try:
            async with asyncio.timeout(limit_s):
                answer = await client.score_fidelity(
                    page.content,
                    image,
                    image_index=index,
                    timeout_s=limit_s,
                    with_regions=with_regions,
                    path=page.path,
                    files=tuple(f for f in project if f is not page),
                    viewport_width=tag.viewport_width,
                    owner=owner,
                    check_accessibility=check,
                )
            if check and on_accessibility is not None:
                on_accessibility(_checked(answer.accessibility, answer.fidelity, page.path))
            return answer
        except TimeoutError:
            reason = f"not scored within {limit_s:g} s"
        except ToolServiceError as exc:
            reason = str(exc)
        if check and on_accessibility is not None:
            width = tag.viewport_width
            on_accessibility(Accessibility(width, page.path, unavailable_reason=reason))
        return _unavailable(index, tag.viewport_width, reason, page.path)

    scored = images[:MAX_SCORED_IMAGES]
    return tuple(await asyncio.gather(*(one(i, image) for i, image in enumerate(scored))))


def _first_per_page_and_width(images: tuple[InputImage, ...], entry: str) -> frozenset[int]:
    """The images whose renders are checked: one per page and width (another screenshot of
    the same page at the same width would render it again for the same answer). An
    untagged screenshot is rendered at its own width, unknown here: each is checked."""
    first: dict[tuple[str, int], int] = {}
    for index, image in enumerate(images[:MAX_SCORED_IMAGES]):
        tag = image.tag
        key = (tag.path or entry, tag.viewport_width) if tag.viewport_width else ("", -index)
        first.setdefault(key, index)
    return frozenset(first.values())


def _checked(check: Accessibility | None, fidelity: Fidelity, path: str) -> Accessibility:
    if check is None:  # a worker that predates the check answers without one
        reason = fidelity.unavailable_reason or "the tool worker does not check accessibility"
        return Accessibility(fidelity.viewport_width, path, unavailable_reason=reason)
    return replace(check, path=path)


def _unavailable(index: int, width: int, reason: str, path: str) -> FidelityAnswer:
    return FidelityAnswer(Fidelity(index, width, unavailable_reason=reason, path=path))
