from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from services.common.input_images import InputImage
from services.tools.definitions import TOOL_DEFINITIONS
from services.tools.file_tools import file_tool_handlers
from services.tools.runtime import ToolRuntime
from services.tools.types import (
    FileState,
    MediaPart,
    ToolCall,
    ToolContext,
    ToolFlags,
    ToolHandler,
    ToolOutcome,
)

ALL_NAMES = [d.name for d in TOOL_DEFINITIONS]
CTX = ToolContext()
FILE = FileState("index.html", "<html><body>Hello</body></html>")


@dataclass
class CountingTool:
    """A handler that records its calls and answers with a distinct outcome each time."""

    calls: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(
        self, args: dict[str, Any], file: FileState | None, ctx: ToolContext
    ) -> ToolOutcome:
        self.calls.append(args)
        return ToolOutcome(True, {"n": len(self.calls)}, {"n": len(self.calls)})


@dataclass
class GatedTool:
    """A handler that waits for the test to release it, so overlap is deterministic."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    calls: int = 0
    cancelled: bool = False

    async def __call__(
        self, args: dict[str, Any], file: FileState | None, ctx: ToolContext
    ) -> ToolOutcome:
        self.calls += 1
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return ToolOutcome(True, {"call": self.calls}, {"call": self.calls})


def every_tool(handler: ToolHandler) -> dict[str, ToolHandler]:
    return dict.fromkeys(ALL_NAMES, handler)


def call(name: str = "probe", id: str = "call-1", **arguments: Any) -> ToolCall:
    return ToolCall(id=id, name=name, arguments=arguments)


# -- shared checks -------------------------------------------------------------------------


async def test_invalid_json_is_reported_without_running_the_tool() -> None:
    tool = CountingTool()
    runtime = ToolRuntime({"edit_file": tool})
    bad = ToolCall("call-1", "edit_file", {}, invalid_json='{"old_text": "a')
    outcome = await runtime.execute(bad, FILE, CTX)
    assert outcome.ok is False
    assert outcome.result == {
        "error": "Tool arguments were invalid JSON.",
        "INVALID_JSON": '{"old_text": "a',
    }
    assert outcome.summary == {"error": "Invalid JSON tool arguments"}
    assert tool.calls == []


async def test_invalid_json_marker_in_arguments_is_honoured() -> None:
    tool = CountingTool()
    runtime = ToolRuntime({"create_file": tool})
    outcome = await runtime.execute(call("create_file", INVALID_JSON="{oops"), None, CTX)
    assert outcome.result == {"error": "Tool arguments were invalid JSON.", "INVALID_JSON": "{oops"}
    assert outcome.summary == {"error": "Invalid JSON tool arguments"}
    assert tool.calls == []


@pytest.mark.parametrize("name", ["no_such_tool", "generate_images", ""])
async def test_unknown_or_unregistered_tool(name: str) -> None:
    runtime = ToolRuntime(file_tool_handlers())
    outcome = await runtime.execute(call(name), FILE, CTX)
    assert outcome.ok is False
    assert outcome.result == {"error": f"Unknown tool: {name}"}
    assert outcome.summary == {"error": f"Unknown tool: {name}"}


async def test_generate_images_is_refused_when_disabled() -> None:
    tool = CountingTool()
    runtime = ToolRuntime({"generate_images": tool})
    ctx = ToolContext(flags=ToolFlags(image_generation_enabled=False))
    outcome = await runtime.execute(call("generate_images", prompts=["a cat"]), None, ctx)
    assert outcome.ok is False
    assert outcome.result == {"error": "Image generation is disabled."}
    assert outcome.summary == {"error": "Image generation disabled"}
    assert tool.calls == []


async def test_generate_images_runs_when_enabled() -> None:
    tool = CountingTool()
    runtime = ToolRuntime({"generate_images": tool})
    outcome = await runtime.execute(call("generate_images", prompts=["a cat"]), None, CTX)
    assert outcome.ok is True
    assert tool.calls == [{"prompts": ["a cat"]}]


async def test_routes_edit_file_and_keeps_its_result_shape() -> None:
    runtime = ToolRuntime(file_tool_handlers())
    outcome = await runtime.execute(call("edit_file", old_text="Hello", new_text="Bye"), FILE, CTX)
    assert outcome.ok is True
    assert outcome.result["content"] == "Successfully edited file at index.html."
    assert set(outcome.result["details"]) == {"diff", "firstChangedLine"}
    assert outcome.updated_file == FileState("index.html", "<html><body>Bye</body></html>")


async def test_a_raising_handler_becomes_an_error_outcome(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(args: dict[str, Any], file: FileState | None, ctx: ToolContext) -> ToolOutcome:
        raise RuntimeError("disk on fire")

    runtime = ToolRuntime({"save_assets": broken})
    with caplog.at_level(logging.ERROR, logger="services.tools.runtime"):
        outcome = await runtime.execute(call("save_assets", asset_ids=["x"]), None, CTX)
    assert outcome.ok is False
    assert outcome.result == {"error": "save_assets failed: disk on fire"}
    assert outcome.summary == {"error": "save_assets failed"}
    assert outcome.updated_file is None
    assert any("save_assets" in r.getMessage() and r.exc_info for r in caplog.records)


@pytest.mark.parametrize("call_id", ["call-1", ""])
async def test_cancellation_raised_by_a_handler_propagates(call_id: str) -> None:
    async def cancelled(
        args: dict[str, Any], file: FileState | None, ctx: ToolContext
    ) -> ToolOutcome:
        raise asyncio.CancelledError

    runtime = ToolRuntime({"screenshot_preview": cancelled})
    with pytest.raises(asyncio.CancelledError):
        await runtime.execute(call("screenshot_preview", id=call_id), FILE, CTX)


# -- idempotency ---------------------------------------------------------------------------


async def test_a_repeated_call_id_returns_the_cached_outcome() -> None:
    tool = CountingTool()
    runtime = ToolRuntime({"probe": tool})
    first = await runtime.execute(call(x=1), FILE, CTX)
    second = await runtime.execute(call(x=1), FILE, CTX)
    assert len(tool.calls) == 1
    assert second is first


async def test_numerically_equal_arguments_share_the_cache_entry() -> None:
    tool = CountingTool()
    runtime = ToolRuntime({"probe": tool})
    await runtime.execute(call(b=2, a=1), FILE, CTX)
    await runtime.execute(call(a=1, b=2), FILE, CTX)
    assert len(tool.calls) == 1


CHANGES: list[Callable[[ToolCall, FileState | None, ToolContext], tuple[Any, ...]]] = [
    lambda c, f, x: (ToolCall("call-2", c.name, c.arguments), f, x),
    lambda c, f, x: (ToolCall(c.id, c.name, {"x": 2}), f, x),
    lambda c, f, x: (c, FileState("index.html", "<html>other</html>"), x),
    lambda c, f, x: (c, FileState("other.html", f.content if f else ""), x),
    lambda c, f, x: (c, None, x),
    lambda c, f, x: (c, f, ToolContext(option_codes=("<html>1</html>",))),
    lambda c, f, x: (c, f, ToolContext(input_images=(InputImage.of("image/png", b"AA"),))),
    lambda c, f, x: (c, f, ToolContext(flags=ToolFlags(has_input_images=True))),
    lambda c, f, x: (c, f, ToolContext(asset_base_url="http://example.test")),
]


@pytest.mark.parametrize("change", CHANGES)
async def test_any_change_in_input_runs_the_tool_again(
    change: Callable[[ToolCall, FileState | None, ToolContext], tuple[Any, ...]],
) -> None:
    tool = CountingTool()
    runtime = ToolRuntime({"probe": tool})
    original = call(x=1)
    await runtime.execute(original, FILE, CTX)
    changed_call, changed_file, changed_ctx = change(original, FILE, CTX)
    outcome = await runtime.execute(changed_call, changed_file, changed_ctx)
    assert len(tool.calls) == 2
    assert outcome.result == {"n": 2}


async def test_calls_without_an_id_are_never_cached() -> None:
    tool = CountingTool()
    runtime = ToolRuntime({"probe": tool})
    await runtime.execute(call(id=""), FILE, CTX)
    await runtime.execute(call(id=""), FILE, CTX)
    assert len(tool.calls) == 2


async def test_error_outcomes_from_exceptions_are_cached_too() -> None:
    attempts = []

    async def flaky(args: dict[str, Any], file: FileState | None, ctx: ToolContext) -> ToolOutcome:
        attempts.append(1)
        raise ValueError("boom")

    runtime = ToolRuntime({"probe": flaky})
    first = await runtime.execute(call(), FILE, CTX)
    second = await runtime.execute(call(), FILE, CTX)
    assert second is first
    assert len(attempts) == 1


async def test_the_cache_is_a_bounded_lru() -> None:
    tool = CountingTool()
    runtime = ToolRuntime({"probe": tool}, cache_size=2)
    for call_id in ("a", "b", "a", "c"):  # "a" is refreshed, so "b" is the one evicted
        await runtime.execute(call(id=call_id), FILE, CTX)
    assert len(tool.calls) == 3
    await runtime.execute(call(id="a"), FILE, CTX)
    await runtime.execute(call(id="c"), FILE, CTX)
    assert len(tool.calls) == 3
    await runtime.execute(call(id="b"), FILE, CTX)
    assert len(tool.calls) == 4


async def test_outcomes_over_the_byte_budget_are_not_cached() -> None:
    async def big(args: dict[str, Any], file: FileState | None, ctx: ToolContext) -> ToolOutcome:
        calls.append(1)
        media = (MediaPart("preview_desktop.png", "image/png", data=b"\x89PNG" * 1000),)
        return ToolOutcome(True, {}, {}, media=media)

    calls: list[int] = []
    runtime = ToolRuntime({"probe": big}, cache_max_bytes=1000)
    await runtime.execute(call(), FILE, CTX)
    await runtime.execute(call(), FILE, CTX)
    assert len(calls) == 2


async def test_the_byte_budget_evicts_oldest_entries() -> None:
    async def sized(args: dict[str, Any], file: FileState | None, ctx: ToolContext) -> ToolOutcome:
        calls.append(1)
        return ToolOutcome(True, {"blob": "x" * 600}, {})

    calls: list[int] = []
    runtime = ToolRuntime({"probe": sized}, cache_max_bytes=1000)
    await runtime.execute(call(id="a"), FILE, CTX)
    await runtime.execute(call(id="b"), FILE, CTX)  # pushes "a" out
    await runtime.execute(call(id="b"), FILE, CTX)
    assert len(calls) == 2
    await runtime.execute(call(id="a"), FILE, CTX)
    assert len(calls) == 3


async def test_concurrent_duplicates_share_one_execution() -> None:
    tool = GatedTool()
    runtime = ToolRuntime({"probe": tool})
    first = asyncio.create_task(runtime.execute(call(), FILE, CTX))
    second = asyncio.create_task(runtime.execute(call(), FILE, CTX))
    # Both callers have reached the tool (or its shared execution) once it has started.
    await tool.started.wait()
    tool.release.set()
    one, two = await asyncio.gather(first, second)
    assert tool.calls == 1
    assert one is two
    assert one.result == {"call": 1}


async def test_cancelling_one_waiter_leaves_the_shared_execution_running() -> None:
    tool = GatedTool()
    runtime = ToolRuntime({"probe": tool})
    first = asyncio.create_task(runtime.execute(call(), FILE, CTX))
    second = asyncio.create_task(runtime.execute(call(), FILE, CTX))
    await tool.started.wait()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    tool.release.set()
    outcome = await second
    assert outcome.ok is True
    assert tool.calls == 1
    assert tool.cancelled is False


async def test_cancelling_every_waiter_stops_the_tool_and_a_retry_runs_afresh() -> None:
    tool = GatedTool()
    runtime = ToolRuntime({"probe": tool})
    waiter = asyncio.create_task(runtime.execute(call(), FILE, CTX))
    await tool.started.wait()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    # Releasing now cannot rescue the abandoned run: its wait was cancelled already.
    tool.release.set()
    outcome = await runtime.execute(call(), FILE, CTX)
    assert outcome.result == {"call": 2}
    assert tool.cancelled is True


# -- definitions ---------------------------------------------------------------------------


def test_definitions_follow_the_canonical_order() -> None:
    runtime = ToolRuntime(every_tool(CountingTool()))
    flags = ToolFlags(has_input_images=True)
    assert [d.name for d in runtime.definitions(flags, ALL_NAMES[::-1])] == ALL_NAMES


def test_definitions_only_cover_registered_tools() -> None:
    runtime = ToolRuntime(file_tool_handlers())
    names = [d.name for d in runtime.definitions(ToolFlags(has_input_images=True), ALL_NAMES)]
    assert names == ["create_file", "edit_file", "retrieve_option"]
    assert runtime.tool_names == {"create_file", "edit_file", "retrieve_option"}


def test_definitions_only_cover_available_tools() -> None:
    runtime = ToolRuntime(every_tool(CountingTool()))
    hidden = {"edit_image", "screenshot_preview", "compare_with_reference"}
    available = [n for n in ALL_NAMES if n not in hidden]
    names = [d.name for d in runtime.definitions(ToolFlags(has_input_images=True), available)]
    assert names == [
        "create_file",
        "edit_file",
        "generate_images",
        "remove_background",
        "extract_assets",
        "save_assets",
        "retrieve_option",
    ]


@pytest.mark.parametrize(
    ("flags", "generate", "extract"),
    [
        (ToolFlags(True, True, True), True, True),
        (ToolFlags(False, True, True), False, True),
        (ToolFlags(True, False, True), True, False),
        (ToolFlags(True, True, False), True, False),
        (ToolFlags(False, False, False), False, False),
    ],
)
def test_definitions_are_gated_by_flags(flags: ToolFlags, generate: bool, extract: bool) -> None:
    runtime = ToolRuntime(every_tool(CountingTool()))
    names = {d.name for d in runtime.definitions(flags, ALL_NAMES)}
    assert ("generate_images" in names) is generate
    assert ("extract_assets" in names) is extract
    assert names >= {"create_file", "edit_file", "save_assets", "retrieve_option", "edit_image"}
