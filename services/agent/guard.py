"""Updates keep what was not asked for (docs/fidelity.md; issue 37).

An update about a selected element (select-and-edit: `Prompt.selected_element_html`) is
checked once its option's model ends a turn with a page: the tool workers render the
previous page and the new one at the screenshots' widths (1280 when none is tagged) and
report the boxes that changed outside the element (CompareRenders). When some did, the
client hears of them (`UnrequestedChanges`, check 0) and the model gets one more turn,
once per option, naming them, so it may put them back; the page it ends with is checked
again (check 1) and the option completes with it, whatever that check says. An update
without a selected element asks for a change to the whole page: nothing is checked.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from services.agent.domain import FileState
from services.agent.events import ChangedWidth, Status, UnrequestedChanges
from services.agent.providers.base import PromptMessage
from services.agent.tool_client import ToolServiceError
from services.agent.tooling import ChangeClient
from services.common.input_images import InputImage

DEFAULT_WIDTH = 1280
MAX_WIDTHS = 4
MAX_SUMMARY = 400


def check_widths(images: tuple[InputImage, ...]) -> tuple[int, ...]:
    """The widths the screenshots were tagged with, first seen first (at most
    MAX_WIDTHS); the desktop width when none is."""
    tagged = dict.fromkeys(i.tag.viewport_width for i in images if i.tag.viewport_width)
    return tuple(tagged)[:MAX_WIDTHS] or (DEFAULT_WIDTH,)


@dataclass
class ChangeGuard:
    client: ChangeClient
    before: tuple[FileState, ...]  # the project the update starts from, entry page first
    selected: str  # the selected element's outerHTML
    widths: tuple[int, ...]
    limit_s: float  # one check's time limit
    text_mode: bool  # the model answers with a fenced page, not with edit_file
    emit: Callable[[Status | UnrequestedChanges], None]  # into the variant's events
    deadline: float = float("inf")
    owner: str = ""
    checks: list[UnrequestedChanges] = field(default_factory=list)  # the run record's
    told: bool = False  # the model had its one turn
    done: bool = False
    seconds: list[float] = field(default_factory=list)  # wall time of each check

    async def review(
        self, project: tuple[FileState, ...], affordable: bool
    ) -> PromptMessage | None:
        """Checks `project`, the page the model just ended a turn with; the turn that names
        what changed beyond the request, or None when the option is done."""
        if self.done or not project or not self.before:
            return None
        widths = await self._compare(project)
        if widths is None:
            self.done = True
            return None
        changed = [w for w in widths if w.regions]
        if self.told:
            self.done = True
            self._report(1, widths)
            left = sum(len(w.regions) for w in widths)
            self._say(
                f"Checked again: {left} region{'s' if left != 1 else ''} still changed beyond "
                "the selected element."
                if left
                else "Checked again: nothing changed beyond the selected element now."
            )
            return None
        if not changed:
            self.done = True
            unchecked = [w.unavailable_reason for w in widths if w.unavailable_reason]
            if unchecked:
                self._say(f"Changes beyond the selected element not checked: {unchecked[0]}")
            return None
        self._report(0, widths)
        if not affordable:
            self.done = True
            self._say("The cost budget is spent: the model is not asked to restore them.")
            return None
        if time.monotonic() + 2 * self.limit_s > self.deadline:
            self.done = True
            self._say("Too little time is left: the model is not asked to restore them.")
            return None
        self.told = True
        return PromptMessage("user", self._turn(widths))

    async def _compare(self, project: tuple[FileState, ...]) -> tuple[ChangedWidth, ...] | None:
        limit_s = max(0.1, min(self.limit_s, self.deadline - time.monotonic()))
        started = time.monotonic()
        try:
            async with asyncio.timeout(limit_s):
                return await self.client.compare_renders(
                    self.before,
                    project,
                    widths=self.widths,
                    selected_element_html=self.selected,
                    timeout_s=limit_s,
                    owner=self.owner,
                )
        except TimeoutError:
            reason = f"not checked within {limit_s:g} s"
        except ToolServiceError as exc:
            reason = str(exc)
        finally:
            self.seconds.append(time.monotonic() - started)
        self._say(f"Changes beyond the selected element not checked: {reason}")
        return None

    def _report(self, check: int, widths: tuple[ChangedWidth, ...]) -> None:
        report = UnrequestedChanges(check, widths, summary(widths))
        self.checks.append(report)
        self.emit(report)
        if check == 0:
            self._say(report.summary)

    def _say(self, text: str) -> None:
        self.emit(Status(text))

    def _turn(self, widths: tuple[ChangedWidth, ...]) -> str:
        lines = [
            "Your update also changed parts of the page outside the element the user "
            "selected, which the request did not ask for:"
        ]
        for width in widths:
            for r in width.regions:
                lines.append(
                    f"- at {width.viewport_width} px wide, the box x={r.x} y={r.y} "
                    f"{r.width}×{r.height}: before {_quoted(r.before_text)}, now "
                    f"{_quoted(r.after_text)}"
                )
        how = (
            "answer with the whole corrected page in one fenced block"
            if self.text_mode
            else "restore them with `edit_file`"
        )
        lines.append(
            f"Unless a change was needed for the request, {how}, exactly as they were, and "
            "keep the change to the selected element. If every change was needed, say so "
            "and change nothing."
        )
        return "\n".join(lines)


def summary(widths: tuple[ChangedWidth, ...]) -> str:
    """In words: how many boxes changed beyond the selected element, and their text."""
    count = sum(len(w.regions) for w in widths)
    if not count:
        return "Nothing changed beyond the selected element."
    texts = [
        f"{_quoted(r.before_text)} → {_quoted(r.after_text)}"
        for w in widths
        for r in w.regions
        if r.before_text != r.after_text
    ]
    line = f"{count} region{'s' if count != 1 else ''} changed beyond the selected element"
    text = f"{line}: {'; '.join(texts)}." if texts else f"{line} (no text changed)."
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 1] + "…"


def _quoted(text: str) -> str:
    return f'"{text}"' if text else "no text"
