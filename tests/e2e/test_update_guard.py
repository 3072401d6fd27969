"""Updates keep what was not asked for (docs/fidelity.md; issue 37 item 2).

An update about a selected element (the heading) is checked by rendering the previous
page and the new one in the tool worker's browser. A scripted model that also rewrites
the footer is told so, once, restores it, and the option ends with the footer back; the
footer's change is in the events and the run record. A model that changes only the
heading, even to a size that pushes the rest of the page down, is told nothing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import grpc
import pytest
import pytest_asyncio
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2
from s2c.tools.v1 import tool_service_pb2 as tpb
from s2c.tools.v1 import tool_service_pb2_grpc as tpb_grpc

from services.agent.settings import AgentSettings
from services.common.credentials import Credentials, Endpoint
from services.common.errors import FieldViolation, bad_request_violations
from services.tools.settings import ToolsSettings
from tests.browser.pages import CHROMIUM
from tests.fakes.openai_server import FakeOpenAI, FunctionCall, Text, chat_turn
from tests.suite import Suite, generation_events, generation_refusal, run_ws, running_suite

pytestmark = pytest.mark.asyncio(loop_scope="module")

HEADING = '<h1 id="title" style="font-size:40px;margin:0 0 24px">Fresh bread</h1>'
FOOTER = '<footer style="margin-top:400px;font-size:20px">Visit us on Rua Augusta</footer>'
PAGE = (
    '<!doctype html><html><body style="margin:40px;font-family:sans-serif">'
    f'{HEADING}<p style="font-size:20px">Baked in small batches since 1987</p>{FOOTER}'
    "</body></html>"
)
NEW_HEADING = HEADING.replace("Fresh bread", "Fresh bread and cakes")
NEW_FOOTER = FOOTER.replace("Visit us on Rua Augusta", "Closed on Mondays")
INSTRUCTION = "Say that we sell cakes too"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def openai() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def suite(
    tmp_path_factory: pytest.TempPathFactory, openai: FakeOpenAI
) -> AsyncIterator[Suite]:
    data_dir = tmp_path_factory.mktemp("guard")
    models = data_dir / "models.toml"
    models.write_text(
        f'[[endpoint]]\nname = "ollama"\napi = "chat"\nbase_url = "{openai.base_url}"\n'
        '[[endpoint.model]]\nid = "coder"\n',
        encoding="utf-8",
    )
    agent = replace(
        AgentSettings.from_env({"S2C_MODELS_FILE": str(models)}),
        provider_max_retries=0,
        preview_replay_s=0.0,
        credentials=Credentials.of(openai=Endpoint("sk-test", openai.base_url)),
    )
    tools = ToolsSettings(screenshots_enabled=True, chromium_path=CHROMIUM)
    async with running_suite(data_dir, agent=agent, tools=tools) as s:
        yield s


def update(selected: str = HEADING, page: str = PAGE) -> pb.GenerateCodeRequest:
    return pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_UPDATE,
        input_mode=pb.INPUT_MODE_IMAGE,
        prompt=pb.Prompt(
            text=INSTRUCTION,
            full_text=f"{INSTRUCTION} referring to this element specifically: {selected}",
            selected_element_html=selected,
        ),
        file_state=common_pb2.FileState(path="index.html", content=page),
        models=["ollama:coder"],
        variant_count=1,
    )


def edit(i: int, old: str, new: str) -> FunctionCall:
    args = {"path": "index.html", "old_text": old, "new_text": new}
    return FunctionCall(f"call_{i}", "edit_file", json.dumps(args), pieces=2)


def sent(openai: FakeOpenAI, since: int) -> list[str]:
    return [json.dumps(r.json) for r in openai.requests[since:]]


async def record_of(suite: Suite, generation_id: str) -> Any:
    record = suite.agent.manager.get(generation_id)
    assert record is not None
    return record


async def test_a_change_beyond_the_selected_element_is_reported_and_restored(
    suite: Suite, openai: FakeOpenAI
) -> None:
    openai.add_chat(
        chat_turn([edit(0, HEADING, NEW_HEADING), edit(1, FOOTER, NEW_FOOTER)]),
        chat_turn([Text(["Done."])]),
        chat_turn([edit(2, NEW_FOOTER, FOOTER)]),
        chat_turn([Text(["Restored the footer."])]),
    )
    since = len(openai.requests)
    events = await generation_events(suite.agent.port, update())
    assert events[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
    reports = [e.unrequested_changes for e in events if e.HasField("unrequested_changes")]
    assert [r.check for r in reports] == [0, 1]
    [first] = reports[0].widths
    assert first.viewport_width == 1280
    assert first.unavailable_reason == ""
    # Only the footer: the heading was asked for, the paragraph did not change.
    [footer] = first.regions
    assert (footer.before_text, footer.after_text) == (
        "Visit us on Rua Augusta",
        "Closed on Mondays",
    )
    assert footer.y > first.target.y + first.target.height
    assert "Rua Augusta" in reports[0].summary
    assert [w.regions for w in reports[1].widths] == [[]]
    # Both reports come before the option completes; the model had exactly one more turn.
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds.index("variant_complete") > max(
        i for i, k in enumerate(kinds) if k == "unrequested_changes"
    )
    bodies = sent(openai, since)
    assert len(bodies) == 4
    told = [b for b in bodies if "outside the element the user selected" in b]
    assert len(told) == 2  # the turn itself, and the request that carried its answer on
    assert "Rua Augusta" in told[0]
    assert "Closed on Mondays" in told[0]
    record = await record_of(suite, events[0].generation_id)
    [variant] = record.variants
    assert "Fresh bread and cakes" in variant.code
    assert "Visit us on Rua Augusta" in variant.code
    assert [c.check for c in variant.unrequested_changes] == [0, 1]
    kept = variant.unrequested_changes[0].widths[0].regions[0]
    assert kept.before_text == "Visit us on Rua Augusta"


async def test_a_change_to_the_selected_element_only_reports_nothing(
    suite: Suite, openai: FakeOpenAI
) -> None:
    # The heading grows to three lines: everything below it moves down, and still only
    # the change asked for was made.
    big = HEADING.replace("Fresh bread", "Fresh bread, " * 12).replace("40px", "56px")
    openai.add_chat(chat_turn([edit(0, HEADING, big)]), chat_turn([Text(["Done."])]))
    since = len(openai.requests)
    events = await generation_events(suite.agent.port, update())
    assert events[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
    assert not [e for e in events if e.HasField("unrequested_changes")]
    assert len(sent(openai, since)) == 2
    record = await record_of(suite, events[0].generation_id)
    assert record.variants[0].unrequested_changes == ()
    assert "Fresh bread, Fresh bread" in record.variants[0].code


async def test_a_neighbour_that_only_moves_is_not_reported(
    suite: Suite, openai: FakeOpenAI
) -> None:
    # A longer heading in a flex row narrows the picture beside it: its pixels change,
    # but the picture itself (colour, content) does not, so it is the request's reflow.
    row = (
        '<div style="display:flex;gap:32px;align-items:center">'
        f"<div>{HEADING}</div>"
        '<div style="flex:1;height:240px;border-radius:16px;'
        'background:linear-gradient(135deg,#fde68a,#b45309)"></div></div>'
    )
    page = PAGE.replace(HEADING, row)
    longer = HEADING.replace("Fresh bread", "Fresh bread, baked every single morning")
    openai.add_chat(chat_turn([edit(0, HEADING, longer)]), chat_turn([Text(["Done."])]))
    since = len(openai.requests)
    events = await generation_events(suite.agent.port, update(page=page))
    assert events[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
    assert not [e for e in events if e.HasField("unrequested_changes")]
    assert len(sent(openai, since)) == 2


async def test_bad_input_is_refused_with_the_field(suite: Suite) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.tools.port}") as channel:
        stub = tpb_grpc.ToolServiceStub(channel)
        for request, field in (
            (tpb.CompareRendersRequest(before=PAGE, after=PAGE), "selected_element_html"),
            (
                tpb.CompareRendersRequest(before="", after=PAGE, selected_element_html=HEADING),
                "before",
            ),
            (
                tpb.CompareRendersRequest(
                    before=PAGE, after=PAGE, selected_element_html=HEADING, viewport_widths=[90]
                ),
                "viewport_widths",
            ),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.CompareRenders(request)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert [v.field for v in bad_request_violations(caught.value)] == [field]
    refused = await generation_refusal(suite.agent.port, update("<b>" + "x" * 200_001 + "</b>"))
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert bad_request_violations(refused) == [
        FieldViolation("prompt.selected_element_html", "at most 200000 characters")
    ]


async def test_a_bad_selected_element_on_the_socket_is_an_error_and_4332(suite: Suite) -> None:
    params = {
        "generationType": "update",
        "inputMode": "text",
        "generatedCodeConfig": "html_tailwind",
        "prompt": {"text": INSTRUCTION, "images": [], "videos": []},
        "history": [{"role": "user", "text": INSTRUCTION, "images": [], "videos": []}],
        "fileState": {"path": "index.html", "content": PAGE},
    }
    for selected, reason in (
        (7, "Invalid params: prompt.selectedElementHtml must be a string, got a number"),
        ("<b>" + "x" * 200_001 + "</b>", "prompt.selected_element_html"),
    ):
        params["prompt"]["selectedElementHtml"] = selected  # type: ignore[index]
        result = await run_ws(suite.ws_url, params)
        assert result.close_code == 4332
        [error] = [f for f in result.frames if f["type"] == "error"]
        assert reason in error["value"]
