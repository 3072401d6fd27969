"""An update without `file_state` starts from the file in its history (issue 15, item 2).

Upstream seeds the file from the last assistant message, then from the legacy marker
"Here is the code of the app:"; without either there is no file. The last test sends
such an update over gRPC to a real agent and tool worker, and a scripted model's
`edit_file` succeeds on the recovered file.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.agent.domain import FileState, GenerationRequest, HistoryMessage
from services.agent.prompts import current_file
from services.agent.prompts.file_seed import LEGACY_CODE_MARKER, seed_file_state
from services.agent.providers.base import ProviderSession
from services.agent.providers.factory import SessionRequest
from services.agent.providers.scripted import Say, ScriptedSession, ScriptedTurn, call_tool
from services.agent.server import AgentServer
from services.agent.settings import AgentSettings
from services.tools.server import ToolsServer
from services.tools.settings import ToolsSettings

OLD = "<!DOCTYPE html>\n<html><body><h1>Old title</h1></body></html>"
OLDER = "<!DOCTYPE html>\n<html><body><h1>First try</h1></body></html>"


def user(text: str) -> HistoryMessage:
    return HistoryMessage("user", text)


def assistant(text: str) -> HistoryMessage:
    return HistoryMessage("assistant", text)


@pytest.mark.parametrize(
    "text",
    [
        OLD,
        f'<file path="index.html">\n{OLD}\n</file>',
        f"Here you go:\n```html\n{OLD}\n```\nEnjoy.",
        f"Some words first. {OLD} and some after.",
    ],
    ids=["plain", "file-wrapper", "fenced", "prose-around"],
)
def test_the_last_assistant_message_is_the_file(text: str) -> None:
    history = (user("A page"), assistant(OLDER), user("Again"), assistant(text), user("Blue"))
    assert seed_file_state(history) == FileState("index.html", OLD)


def test_an_assistant_message_without_html_is_taken_as_it_is() -> None:
    # Upstream's extraction returns the text itself when it finds no document.
    history = (user("A page"), assistant("<div>just a fragment</div>"), user("Blue"))
    assert seed_file_state(history) == FileState("index.html", "<div>just a fragment</div>")


def test_the_legacy_marker_when_no_assistant_message_has_code() -> None:
    legacy = f"Make the title blue.\n\n{LEGACY_CODE_MARKER}\n{OLD}"
    assert seed_file_state((user(legacy),)) == FileState("index.html", OLD)
    # A blank assistant message does not hide the marker.
    assert seed_file_state((user(legacy), assistant("  "), user("Blue"))) == FileState(
        "index.html", OLD
    )


def test_the_assistant_message_wins_over_the_legacy_marker() -> None:
    history = (user(f"{LEGACY_CODE_MARKER} {OLDER}"), assistant(OLD), user("Blue"))
    assert seed_file_state(history) == FileState("index.html", OLD)


@pytest.mark.parametrize(
    "history",
    [
        (),
        (user("Blue"),),
        (user("A page"), assistant(" \n"), user("Blue")),
        (user(LEGACY_CODE_MARKER),),
    ],
    ids=["empty", "only-user", "blank-assistant", "marker-without-code"],
)
def test_no_code_means_no_file(history: tuple[HistoryMessage, ...]) -> None:
    assert seed_file_state(history) is None


def test_file_state_wins_and_a_create_seeds_nothing() -> None:
    base = GenerationRequest(generation_id="g", history=(user("A"), assistant(OLD), user("B")))
    update = replace(base, generation_type="update")
    assert current_file(update) == FileState("index.html", OLD)
    sent = FileState("app.html", OLDER)
    assert current_file(replace(update, file_state=sent)) == sent
    assert current_file(base) is None


# --- over gRPC: a real agent and tool worker -------------------------------------------------

EDIT = {"path": "index.html", "old_text": "Old title", "new_text": "New title", "count": 1}


def edit_then_stop(wanted: SessionRequest) -> ProviderSession:
    return ScriptedSession(
        [
            ScriptedTurn((call_tool(f"edit-{wanted.variant_index}", "edit_file", EDIT, 16),)),
            ScriptedTurn((Say(("Renamed the title.",)),)),
        ]
    )


async def test_an_update_with_history_only_edits_the_recovered_file(tmp_path: Path) -> None:
    tools = ToolsServer(
        ToolsSettings(screenshots_enabled=False, listen="127.0.0.1:0", data_dir=tmp_path)
    )
    await tools.start()
    settings = AgentSettings(
        demo_pace_s=0.0,
        listen="127.0.0.1:0",
        tools_addr=f"127.0.0.1:{tools.port}",
        data_dir=tmp_path,
    )
    agent = AgentServer(settings, edit_then_stop)
    await agent.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{agent.port}") as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            request = pb.GenerateCodeRequest(
                generation_id="seeded",
                generation_type=pb.GENERATION_TYPE_UPDATE,
                history=[
                    pb.HistoryMessage(role=pb.ROLE_USER, text="A page"),
                    pb.HistoryMessage(role=pb.ROLE_ASSISTANT, text=OLD),
                    pb.HistoryMessage(role=pb.ROLE_USER, text="Rename the title"),
                ],
                models=["demo"],
                variant_count=1,
            )
            events = [e async for message in stub.GenerateCode(request) for e in message.events]
            record = await stub.GetGeneration(pb.GetGenerationRequest(generation_id="seeded"))
    finally:
        await agent.stop(grace_s=0.0)
        await tools.stop()

    results = [e.tool_result for e in events if e.WhichOneof("payload") == "tool_result"]
    assert [(r.name, r.ok) for r in results] == [("edit_file", True)]
    snapshots = [e.code_snapshot for e in events if e.WhichOneof("payload") == "code_snapshot"]
    assert snapshots[-1].content == OLD.replace("Old title", "New title")
    assert events[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
    assert record.generation.variants[0].code == OLD.replace("Old title", "New title")
