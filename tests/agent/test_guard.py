"""The change check's decisions (services/agent/guard.py), with a scripted tool client: one
turn per option at most, none over budget or when the check fails, and a cancelled
generation cancels the check it is waiting on."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from services.agent.domain import FileState
from services.agent.events import ChangedRegion, ChangedWidth, Status, UnrequestedChanges
from services.agent.guard import ChangeGuard, check_widths, summary
from services.agent.tool_client import ToolServiceError
from services.common.input_images import InputImage
from services.common.tool_types import ImageTag

BEFORE = (FileState("index.html", "<h1>a</h1><p>b</p>"),)
AFTER = (FileState("index.html", "<h1>A</h1><p>B</p>"),)
FOOTER = ChangedRegion(0, 400, 300, 32, "Visit us", "Closed")


@dataclass
class Client:
    answers: list[tuple[ChangedWidth, ...] | Exception]
    calls: int = 0
    started: asyncio.Event = field(default_factory=asyncio.Event)
    block: bool = False
    cancelled: bool = False

    async def compare_renders(
        self,
        before: tuple[FileState, ...],
        after: tuple[FileState, ...],
        *,
        widths: tuple[int, ...],
        selected_element_html: str,
        timeout_s: float,
        owner: str = "",
    ) -> tuple[ChangedWidth, ...]:
        self.calls += 1
        self.started.set()
        if self.block:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def guard(client: Client, said: list[Status | UnrequestedChanges]) -> ChangeGuard:
    return ChangeGuard(client, BEFORE, "<h1>a</h1>", (1280,), 30.0, False, said.append)


async def test_one_turn_then_one_more_check() -> None:
    changed = (ChangedWidth(1280, (FOOTER,)),)
    client = Client([changed, (ChangedWidth(1280),)])
    said: list[Status | UnrequestedChanges] = []
    checker = guard(client, said)
    turn = await checker.review(AFTER, affordable=True)
    assert turn is not None
    assert "Visit us" in turn.text
    assert "edit_file" in turn.text
    assert await checker.review(AFTER, affordable=True) is None
    assert await checker.review(AFTER, affordable=True) is None  # done: no third check
    assert client.calls == 2
    assert [c.check for c in checker.checks] == [0, 1]
    assert [s.text for s in said if isinstance(s, Status)][-1] == (
        "Checked again: nothing changed beyond the selected element now."
    )


async def test_nothing_changed_and_no_budget_and_failures_give_no_turn() -> None:
    quiet: list[Status | UnrequestedChanges] = []
    assert await guard(Client([(ChangedWidth(1280),)]), quiet).review(AFTER, True) is None
    assert quiet == []
    said: list[Status | UnrequestedChanges] = []
    poor = guard(Client([(ChangedWidth(1280, (FOOTER,)),)]), said)
    assert await poor.review(AFTER, affordable=False) is None
    assert [c.check for c in poor.checks] == [0]  # still reported
    assert "cost budget" in str(said[-1])
    failed: list[Status | UnrequestedChanges] = []
    broken = guard(Client([ToolServiceError("no worker")]), failed)
    assert await broken.review(AFTER, affordable=True) is None
    assert failed == [Status("Changes beyond the selected element not checked: no worker")]


async def test_a_cancelled_generation_cancels_the_check() -> None:
    client = Client([], block=True)
    task = asyncio.create_task(guard(client, []).review(AFTER, affordable=True))
    await client.started.wait()
    task.cancel()
    done, _ = await asyncio.wait({task})
    assert task in done
    assert task.cancelled()
    assert client.cancelled


def test_widths_and_summary() -> None:
    def image(width: int | None) -> InputImage:
        return InputImage.of("image/png", b"x", ImageTag(viewport_width=width or 0))

    assert check_widths(()) == (1280,)
    assert check_widths((image(390), image(1280), image(390), image(None))) == (390, 1280)
    assert summary((ChangedWidth(1280, (FOOTER,)),)) == (
        '1 region changed beyond the selected element: "Visit us" → "Closed".'
    )
