"""A variant's project bounds in the engine (issue 35, items 7 and 8): a create_file past
the project's file count, and a text-mode page past a file's or the project's bytes."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from services.agent import events as ev
from services.agent.domain import FileState
from services.agent.engine import CostBudget, EngineError, VariantEngine
from services.agent.providers.scripted import Say, ScriptedSession, ScriptedTurn, call_tool
from services.agent.settings import AgentSettings
from services.agent.tooling import ToolContext
from services.common.project_limits import MAX_FILE_BYTES
from tests.agent.test_engine import InProcessTools

Emitted = list[tuple[str, ev.Payload]]


def engine(
    turns: Sequence[ScriptedTurn],
    emitted: Emitted,
    context: ToolContext,
    files: Sequence[FileState] = (),
    *,
    text_mode: bool = False,
) -> tuple[VariantEngine, InProcessTools]:
    tools = InProcessTools()
    variant = VariantEngine(
        index=0,
        session=ScriptedSession(list(turns)),
        tools=tools,
        context=context,
        emit=lambda event_id, payload: emitted.append((event_id, payload)),
        budget=CostBudget(None),
        file=files[0] if files else None,
        files={f.path: f for f in files},
        text_mode=text_mode,
    )
    return variant, tools


SITE = (FileState("index.html", "<p>home</p>"), FileState("about.html", "<p>about</p>"))


async def test_a_create_file_past_the_projects_file_count_is_a_tool_error_never_previewed() -> None:
    turns = [
        ScriptedTurn(
            (call_tool("c1", "create_file", {"path": "new.html", "content": "<p>n</p>"}),)
        ),
        ScriptedTurn((call_tool("c2", "create_file", {"path": "about.html", "content": "<b>"}),)),
        ScriptedTurn((Say(("done",)),)),
    ]
    emitted: Emitted = []
    variant, tools = engine(turns, emitted, ToolContext(max_project_files=2), SITE)

    await variant.run()

    assert tools.calls == ["create_file"]  # only the rewrite of a file it has ran
    session = variant.session
    assert isinstance(session, ScriptedSession)
    [refused], [rewritten] = session.tool_results
    assert refused.result == {
        "error": "Too many files: 3 files; a project holds at most 2 (S2C_MAX_PROJECT_FILES). "
        "Write the content into one of the project's files instead."
    }
    assert rewritten.ok
    assert list(variant.files) == ["index.html", "about.html"]
    paths = {p.path for _, p in emitted if isinstance(p, ev.CodeDelta | ev.CodeSnapshot)}
    assert "new.html" not in paths


async def test_a_text_mode_page_stops_at_the_per_file_limit_and_nothing_past_it_is_shown() -> None:
    piece = "x" * (256 << 10)
    chunks = ("Here.\n```html\n", *([piece] * 9), "\n```\n")  # 2.25 MiB: past 2 MiB
    emitted: Emitted = []
    variant, _ = engine([ScriptedTurn((Say(chunks),))], emitted, ToolContext(), text_mode=True)

    with pytest.raises(EngineError) as stopped:
        await variant.run()

    assert str(stopped.value) == (
        f"Stopped: the page in the model's answer grew past {MAX_FILE_BYTES} bytes, the most "
        "one file may hold."
    )
    shown = sum(len(p.text) for _, p in emitted if isinstance(p, ev.CodeDelta))
    assert shown == 8 * len(piece) <= MAX_FILE_BYTES


async def test_a_text_mode_page_is_held_to_what_the_other_files_leave_of_the_project() -> None:
    chunks = ("```html\n", "y" * 40, "y" * 40, "\n```")
    emitted: Emitted = []
    # index.html (10 + 11 bytes) and about.html's path (10) leave 100 - 31 = 69.
    context = ToolContext(max_project_bytes=100)
    # The page is written to the current file (the first), about.html.
    files = (FileState("about.html", ""), SITE[0])
    variant, _ = engine([ScriptedTurn((Say(chunks),))], emitted, context, files, text_mode=True)

    with pytest.raises(EngineError) as stopped:
        await variant.run()

    assert str(stopped.value) == (
        "Stopped: the page in the model's answer grew past 69 bytes, what the project's other "
        "files leave of 100 (S2C_MAX_PROJECT_BYTES)."
    )
    assert [p.text for _, p in emitted if isinstance(p, ev.CodeDelta)] == ["y" * 40]


async def test_the_page_checks_are_capped_per_option_each_on_its_own() -> None:
    """compare_with_reference and check_accessibility render the page again: past their
    caps a call is refused, never run, and the other tool's calls still count alone."""
    names = ["check_accessibility"] * 3 + ["compare_with_reference"] * 2
    turns = [ScriptedTurn((call_tool(f"c{i}", name, {}),)) for i, name in enumerate(names)]
    turns.append(ScriptedTurn((Say(("done",)),)))
    emitted: Emitted = []
    variant, tools = engine(turns, emitted, ToolContext(), SITE)
    variant.max_checks = {"check_accessibility": 2, "compare_with_reference": 2}

    await variant.run()

    assert tools.calls == names[:2] + names[3:]  # the third check_accessibility never ran
    session = variant.session
    assert isinstance(session, ScriptedSession)
    refused = session.tool_results[2][0]
    assert refused.result == {
        "error": "check_accessibility may run at most 2 times per option; this call was not "
        "run. Fix what the last check listed."
    }
    settings = AgentSettings.from_env({"S2C_MAX_ACCESSIBILITY_CHECKS_PER_VARIANT": "5"})
    assert settings.max_accessibility_checks_per_variant == 5


def test_the_bounds_are_settings_of_the_agent() -> None:
    default = AgentSettings()
    assert (default.max_project_files, default.max_tool_calls_per_turn) == (64, 16)
    env = {"S2C_MAX_PROJECT_FILES": "7", "S2C_MAX_TOOL_CALLS_PER_TURN": "5"}
    settings = AgentSettings.from_env(env)
    assert (settings.max_project_files, settings.max_tool_calls_per_turn) == (7, 5)
    with pytest.raises(ValueError, match="S2C_MAX_TOOL_CALLS_PER_TURN must be > 0"):
        AgentSettings.from_env({"S2C_MAX_TOOL_CALLS_PER_TURN": "0"})
