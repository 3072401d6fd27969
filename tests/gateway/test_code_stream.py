"""Our append-only code stream (`codeStream: "append"`): negotiation, validation, the
appendCode / setCode order, and the upstream UI's whole-file setCodes left as they were."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from s2c.agent.v1 import agent_service_pb2 as pb

from services.agent.settings import AgentSettings
from services.gateway.frames import Frame, FrameBuilder
from services.gateway.params import ParamsError, appends_code
from services.gateway.preview_policy import PreviewPolicyConfig
from tests.gateway.test_frames import Clock, event
from tests.suite import WsResult, create_params, run_ws, running_suite

INTERVAL = PreviewPolicyConfig().append_interval_s


def appending(clock: Clock, *, resumed: bool = False) -> FrameBuilder:
    return FrameBuilder(PreviewPolicyConfig(), clock, append=True, resumed=resumed)


def delta(offset: int, text: str, variant: int = 0) -> pb.GenerationEvent:
    return event(variant, "c", code_delta=pb.CodeDelta(offset=offset, text=text))


def snapshot(content: str, variant: int = 0) -> pb.GenerationEvent:
    return event(variant, "c", code_snapshot=pb.CodeSnapshot(path="index.html", content=content))


def client_code(frames: list[Frame], variant: int = 0, start: str = "") -> str:
    """The code a client that applies the frames as our UI does ends with."""
    code = start
    for f in frames:
        if f.get("variantIndex") != variant:
            continue
        if f["type"] == "setCode":
            code = f["value"]
        elif f["type"] == "appendCode" and "offset" in f:
            # Offsets count UTF-16 code units, as the browser's strings do.
            units = code.encode("utf-16-le")[: 2 * f["offset"]]
            code = units.decode("utf-16-le") + f["value"]
        elif f["type"] == "appendCode":
            code += f["value"]
    return code


# -- params --------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "append"), [(None, False), ("setCode", False), ("append", True)])
def test_code_stream_values(value: str | None, append: bool) -> None:
    assert appends_code({} if value is None else {"codeStream": value}) is append


@pytest.mark.parametrize(
    ("value", "shown"),
    [("appends", '"appends"'), ("Append", '"Append"'), (True, "a boolean"), (1, "a number")],
)
def test_an_unknown_code_stream_names_the_field(value: Any, shown: str) -> None:
    with pytest.raises(ParamsError) as caught:
        appends_code({"codeStream": value})
    assert str(caught.value) == (
        f'Invalid params: codeStream must be "append" or "setCode", got {shown}'
    )


# -- the frame builder ---------------------------------------------------------------------


def test_appends_carry_only_new_text_paced_by_the_interval() -> None:
    clock = Clock()
    b = appending(clock)
    # The first text of a file goes out at once.
    assert b.on_event(delta(0, "<html>")) == [
        {"type": "appendCode", "variantIndex": 0, "value": "<html>"}
    ]
    clock.now += INTERVAL / 4
    assert b.on_event(delta(6, "<body>")) == []
    assert b.on_event(delta(12, "<h1>")) == []
    assert b.next_due() == pytest.approx(100.0 + INTERVAL)
    assert b.on_timer() == []  # not due yet
    clock.now = 100.0 + INTERVAL
    # Everything that waited, once, in one frame.
    assert b.on_timer() == [{"type": "appendCode", "variantIndex": 0, "value": "<body><h1>"}]
    clock.now += 2 * INTERVAL
    # After a quiet interval new text goes out as it arrives.
    assert b.on_event(delta(16, "Hi")) == [{"type": "appendCode", "variantIndex": 0, "value": "Hi"}]
    assert b.flush_all() == []


def test_the_create_file_snapshot_sends_only_what_the_client_lacks() -> None:
    clock = Clock()
    b = appending(clock)
    page = "<html><body>streamed</body></html>"
    frames = b.on_event(delta(0, page[:10]))
    clock.now += INTERVAL / 2
    frames += b.on_event(delta(10, page[10:20]))  # pending
    # The tool ran: its snapshot confirms the streamed file plus the tail still pending.
    frames += b.on_event(snapshot(page))
    frames += b.on_event(event(0, "c", tool_result=pb.ToolResult(name="create_file", ok=True)))
    # The end of the variant repeats the file: nothing to send.
    frames += b.on_event(snapshot(page))
    frames += b.on_event(event(0, variant_complete=pb.VariantComplete()))
    assert [f["type"] for f in frames] == [
        "appendCode",
        "appendCode",
        "toolResult",
        "variantComplete",
    ]
    assert "".join(f["value"] for f in frames if f["type"] == "appendCode") == page


def test_a_file_cut_after_its_end_cuts_the_client_tail_not_resends_it() -> None:
    clock = Clock()
    b = appending(clock)
    streamed = "<html><p>🚀</p></html>\n"
    frames = b.on_event(delta(0, streamed))
    # create_file keeps the document: the newline after </html> is not in the file.
    frames += b.on_event(snapshot(streamed.rstrip()))
    # 21 code points, 22 UTF-16 units: the emoji is two in a browser's string.
    assert frames[1:] == [{"type": "appendCode", "variantIndex": 0, "offset": 22, "value": ""}]
    assert client_code(frames) == streamed.rstrip()
    # Appends go on from the cut.
    clock.now += 1
    assert b.on_event(delta(len(streamed) - 1, "<!-- -->")) == [
        {"type": "appendCode", "variantIndex": 0, "value": "<!-- -->"}
    ]


def test_pending_appends_leave_before_tool_frames() -> None:
    clock = Clock()
    b = appending(clock)
    b.on_event(delta(0, "<p>"))
    assert b.on_event(delta(3, "hello")) == []
    frames = b.on_event(event(0, "c", tool_start=pb.ToolStart(name="edit_file")))
    assert [f["type"] for f in frames] == ["appendCode", "toolStart"]
    assert frames[0]["value"] == "hello"


def test_an_edit_or_a_new_file_is_one_whole_set_code_then_appends_again() -> None:
    clock = Clock()
    b = appending(clock)
    frames = b.on_event(delta(0, "<p>old page</p>"))
    clock.now += 1
    # edit_file changed the middle of the file: whole.
    frames += b.on_event(snapshot("<p>new page</p>"))
    clock.now += 1
    # A second create_file restarts the file: its first text whole, at once (an empty
    # start sends nothing: it would blank the page on show).
    frames += b.on_event(delta(0, ""))
    frames += b.on_event(delta(0, "<main>"))
    clock.now += 1
    frames += b.on_event(delta(6, "</main>"))
    assert frames == [
        {"type": "appendCode", "variantIndex": 0, "value": "<p>old page</p>"},
        {"type": "setCode", "variantIndex": 0, "value": "<p>new page</p>"},
        {"type": "setCode", "variantIndex": 0, "value": "<main>"},
        {"type": "appendCode", "variantIndex": 0, "value": "</main>"},
    ]


def test_a_text_never_repeats_and_variants_keep_their_own_buffers() -> None:
    clock = Clock()
    b = appending(clock)
    pages = {0: "<html>" + "a" * 500 + "</html>", 1: "<html>" + "b" * 300 + "</html>"}
    frames: list[Frame] = []
    for i in range(0, 520, 7):
        for v, page in pages.items():
            if i < len(page):
                frames += b.on_event(delta(i, page[i : i + 7], variant=v))
        clock.now += 0.02
        frames += b.on_timer()
    frames += b.flush_all()
    assert {f["type"] for f in frames} == {"appendCode"}
    for v, page in pages.items():
        sent = [f["value"] for f in frames if f["variantIndex"] == v]
        assert "".join(sent) == page
        # Paced: about one frame per interval, not one per delta.
        assert len(sent) <= len(page) / 7 * 0.02 / INTERVAL + 2


def test_a_resumed_client_gets_whole_code_first() -> None:
    clock = Clock()
    b = appending(clock, resumed=True)
    seen = [
        pb.GenerationEvent(sequence=1, code_delta=pb.CodeDelta(offset=0, text="<h1>")),
        pb.GenerationEvent(sequence=2, event_id="t", thinking_delta=pb.TextDelta(text="a")),
    ]
    for e in seen:  # the silent catch-up up to afterSequence=2
        b.on_event(e)
    assert b.resync() == [{"type": "setCode", "variantIndex": 0, "value": "<h1>"}]
    clock.now += 1
    later = pb.GenerationEvent(sequence=3, code_delta=pb.CodeDelta(offset=4, text="Hi"))
    assert b.on_event(later) == [{"type": "appendCode", "variantIndex": 0, "value": "Hi"}]
    # A variant the catch-up never saw code for: the client may hold appends of events
    # after the resume point, so its first code is whole too.
    other = pb.GenerationEvent(
        sequence=4, variant_index=1, code_delta=pb.CodeDelta(offset=0, text="<p>")
    )
    assert b.on_event(other) == [{"type": "setCode", "variantIndex": 1, "value": "<p>"}]


def test_a_code_frame_that_waited_carries_its_own_codes_sequence() -> None:
    clock = Clock()
    b = FrameBuilder(PreviewPolicyConfig(), clock, append=True, resumable=True)

    def code(seq: int, offset: int, text: str) -> pb.GenerationEvent:
        return pb.GenerationEvent(sequence=seq, code_delta=pb.CodeDelta(offset=offset, text=text))

    assert b.on_event(code(1, 0, "<html>")) == [
        {"type": "appendCode", "variantIndex": 0, "value": "<html>", "seq": 1}
    ]
    clock.now += INTERVAL / 4
    assert b.on_event(code(2, 6, "<body>")) == []  # waits for the interval
    other = pb.GenerationEvent(
        sequence=3, variant_index=1, event_id="t1", thinking_delta=pb.TextDelta(text="x")
    )
    assert b.on_event(other) == []
    clock.now = 100.0 + INTERVAL
    # The later event's frame leaves first; the code frame says which code it holds.
    assert b.on_timer() == [
        {"type": "thinking", "variantIndex": 1, "value": "x", "eventId": "t1", "seq": 3},
        {"type": "appendCode", "variantIndex": 0, "value": "<body>", "seq": 2},
    ]
    # A re-attach from the highest seq seen (3) starts with at least the code held.
    resumed = FrameBuilder(PreviewPolicyConfig(), clock, append=True, resumable=True, resumed=True)
    for e in (code(1, 0, "<html>"), code(2, 6, "<body>"), other):
        resumed.on_event(e)
    assert resumed.resync() == [
        {"type": "setCode", "variantIndex": 0, "value": "<html><body>", "seq": 2}
    ]


def test_without_the_extension_the_builder_sends_whole_set_codes() -> None:
    clock = Clock()
    b = FrameBuilder(PreviewPolicyConfig(), clock)
    frames = b.on_event(delta(0, "<html>"))
    frames += b.on_event(delta(6, "<body>"))
    frames += b.on_event(snapshot("<html><body></body></html>"))
    assert frames == [
        {"type": "setCode", "variantIndex": 0, "value": "<html>"},
        {"type": "setCode", "variantIndex": 0, "value": "<html><body></body></html>"},
    ]


# -- through the gateway -------------------------------------------------------------------


def until_result(frames: list[Frame]) -> list[Frame]:
    """The frames before the first toolResult (create_file's)."""
    return frames[: [f["type"] for f in frames].index("toolResult")]


def final_codes(result: WsResult) -> list[str]:
    variants = sorted({f["variantIndex"] for f in result.of("variantComplete")})
    return [client_code(result.frames, v) for v in variants]


async def test_our_ui_gets_appends_and_the_upstream_ui_whole_files(tmp_path: Any) -> None:
    async with running_suite(tmp_path, agent=AgentSettings(demo_pace_s=0.002)) as suite:
        upstream = await run_ws(suite.ws_url, create_params())
        ours = await run_ws(suite.ws_url, create_params(codeStream="append", resumable=True))
        explicit = await run_ws(suite.ws_url, create_params(codeStream="setCode"))
    assert upstream.close_code == ours.close_code == explicit.close_code == 1000
    # The upstream UI: no frame it does not know, every code frame whole.
    for result in (upstream, explicit):
        assert result.of("appendCode") == []
        assert result.of("setCode")
    assert ours.of("appendCode")
    codes = final_codes(ours)
    assert codes == final_codes(upstream) == [upstream.last_code(v) for v in range(len(codes))]
    for v in range(len(codes)):
        frames = ours.variant_frames(v)
        # The streamed create_file arrives as appends only, in order; the first whole
        # file is the edit_file's, after create_file's result.
        streaming = until_result(frames)
        assert frames[len(streaming)]["data"]["name"] == "create_file"
        assert "setCode" not in [f["type"] for f in streaming]
        assert ours.of("setCode", v)
        created = [
            f["value"] for f in until_result(upstream.variant_frames(v)) if f["type"] == "setCode"
        ]
        assert client_code(streaming, v) == created[-1]
        # Every frame of a resumable socket carries seq, code frames their code's.
        assert all("seq" in f for f in frames)


@pytest.mark.parametrize(
    ("first", "message"),
    [
        (
            create_params(codeStream="diff"),
            'Invalid params: codeStream must be "append" or "setCode", got "diff"',
        ),
        (
            {"resumeGenerationId": "a0-x", "afterSequence": 0, "codeStream": ["append"]},
            'Invalid params: codeStream must be "append" or "setCode", got a list',
        ),
    ],
)
async def test_a_bad_code_stream_is_an_error_frame_and_4332(
    tmp_path: Any, first: dict[str, Any], message: str
) -> None:
    async with running_suite(tmp_path) as suite:
        result = await run_ws(suite.ws_url, first)
        assert suite.agent.manager.generations() == []
    assert result.frames == [{"type": "error", "value": message}]
    assert result.close_code == 4332


# Seconds of real streaming: on uvloop only, the loop `s2c gateway` runs (tests/loops.py).
@pytest.mark.asyncio(loop_factories=["uvloop"])
async def test_a_resumed_socket_starts_whole_and_ends_with_the_right_code(tmp_path: Any) -> None:
    async with running_suite(tmp_path, agent=AgentSettings(demo_pace_s=0.02)) as suite:
        undisturbed = await run_ws(suite.ws_url, create_params())
        first: list[dict[str, Any]] = []
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(suite.ws_url) as ws:
                await ws.send_str(json.dumps(create_params(codeStream="append", resumable=True)))
                async for message in ws:
                    first.append(json.loads(message.data))
                    # Dropped mid-create_file, with several appends held: only code
                    # frames arrive then, so they alone can say what the client holds.
                    if len(client_code(first)) > 400:
                        break
            # A dropped socket (any close but 4333) keeps the generation for a re-attach.
            generation = first[0]["value"]
            after = max(f["seq"] for f in first if "seq" in f)
            resume = {"resumeGenerationId": generation, "afterSequence": after}
            second = await run_ws(suite.ws_url, {**resume, "codeStream": "append"})
    assert second.close_code == 1000
    code_frames = [f for f in second.frames if f["type"] in ("setCode", "appendCode")]
    seen = {f["variantIndex"] for f in first if f["type"] == "appendCode"}
    assert 0 in seen
    for v in seen:
        # The first code frame of each variant on the new socket is whole, and never
        # older than what the client held: no flash back to an earlier snapshot.
        resent = next(f for f in code_frames if f["variantIndex"] == v)
        assert resent["type"] == "setCode"
        assert resent["value"].startswith(client_code(first, v))
    for v in range(len(final_codes(undisturbed))):
        assert client_code(first + second.frames, v) == undisturbed.last_code(v)
