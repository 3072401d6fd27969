"""GenerationEvents → browser frames: ordering, one frame per message per batch, flushing."""

from __future__ import annotations

from typing import Any

from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2

from services.gateway.frames import FrameBuilder
from services.gateway.preview_policy import PreviewPolicyConfig


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def builder(clock: Clock) -> FrameBuilder:
    return FrameBuilder(PreviewPolicyConfig(), clock)


def event(variant: int = 0, event_id: str = "", **payload: Any) -> pb.GenerationEvent:
    return pb.GenerationEvent(variant_index=variant, event_id=event_id, **payload)


def test_variant_models_follow_the_status_frames() -> None:
    b = builder(Clock())
    frames = b.on_event(event(variant_count=pb.VariantCount(count=2, models=["a", "b"])))
    frames += b.on_event(event(0, status=pb.Status(text="Generating code...")))
    frames += b.on_event(event(1, status=pb.Status(text="Generating code...")))
    frames += b.on_event(event(0, "t-0", thinking_delta=pb.TextDelta(text="hm")))
    frames += b.flush_all()
    assert [f["type"] for f in frames] == [
        "variantCount",
        "status",
        "status",
        "variantModels",
        "thinking",
    ]
    assert frames[0] == {"type": "variantCount", "variantIndex": 0, "value": "2"}


def test_deltas_of_one_message_in_one_batch_are_one_frame() -> None:
    b = builder(Clock())
    out = []
    for part in ("a", "b", "c"):
        out += b.on_event(event(0, "assistant-0-1", assistant_delta=pb.TextDelta(text=part)))
    assert out == []
    # Text never waits for a timer of its own: the end of the batch sends it.
    assert b.next_due() is None
    out += b.on_event(event(0, "thinking-0-1", thinking_delta=pb.TextDelta(text="x")))
    assert out == [
        {"type": "assistant", "variantIndex": 0, "value": "abc", "eventId": "assistant-0-1"}
    ]
    assert b.on_timer() == [
        {"type": "thinking", "variantIndex": 0, "value": "x", "eventId": "thinking-0-1"}
    ]
    assert b.on_timer() == []


def test_code_deltas_are_flushed_before_tool_result() -> None:
    clock = Clock()
    b = builder(clock)
    first = b.on_event(event(0, "c", code_delta=pb.CodeDelta(offset=0, text="<html>")))
    assert first == [{"type": "setCode", "variantIndex": 0, "value": "<html>"}]
    assert b.on_event(event(0, "c", code_delta=pb.CodeDelta(offset=6, text="<body>"))) == []
    done = b.on_event(event(0, "c", tool_result=pb.ToolResult(name="create_file", ok=True)))
    assert done[0] == {"type": "setCode", "variantIndex": 0, "value": "<html><body>"}
    assert done[1]["type"] == "toolResult"
    assert done[1]["data"] == {"name": "create_file", "output": {}, "ok": True}


def test_a_delta_at_a_lower_offset_replaces_the_tail() -> None:
    b = builder(Clock())
    b.on_event(event(0, code_delta=pb.CodeDelta(offset=0, text="old page")))
    b.on_event(event(0, code_delta=pb.CodeDelta(offset=3, text=" and more")))
    # A new file (offset 0) replaces the code and is shown at once, like a first preview.
    restarted = b.on_event(event(0, code_delta=pb.CodeDelta(offset=0, text="new")))
    assert restarted == [{"type": "setCode", "variantIndex": 0, "value": "new"}]
    assert b.flush_all() == []


def test_generation_error_is_remembered_for_the_close() -> None:
    b = builder(Clock())
    b.on_event(event(generation_error=pb.GenerationError(message="boom")))
    assert b.error == "boom"


def test_interleaved_variants_keep_their_own_pending_text() -> None:
    clock = Clock()
    b = builder(clock)
    out = []
    for part in ("a", "b", "c"):
        for v in (0, 1):
            out += b.on_event(event(v, f"assistant-{v}-x", assistant_delta=pb.TextDelta(text=part)))
    assert out == []  # no switch between variants forces a frame
    assert sorted(b.on_timer(), key=lambda f: f["variantIndex"]) == [
        {"type": "assistant", "variantIndex": 0, "value": "abc", "eventId": "assistant-0-x"},
        {"type": "assistant", "variantIndex": 1, "value": "abc", "eventId": "assistant-1-x"},
    ]


def test_resumable_clients_get_frames_in_sequence_order() -> None:
    b = FrameBuilder(PreviewPolicyConfig(), Clock(), resumable=True)
    first = b.on_event(
        pb.GenerationEvent(
            variant_index=0, event_id="t0", sequence=1, thinking_delta=pb.TextDelta(text="x")
        )
    )
    second = b.on_event(
        pb.GenerationEvent(
            variant_index=1, event_id="t1", sequence=2, thinking_delta=pb.TextDelta(text="y")
        )
    )
    assert first == []
    assert second == [
        {"type": "thinking", "variantIndex": 0, "value": "x", "eventId": "t0", "seq": 1}
    ]


def test_a_resync_sends_the_code_but_not_text_the_client_already_saw() -> None:
    b = FrameBuilder(PreviewPolicyConfig(), Clock(), resumable=True)
    seen = [
        pb.GenerationEvent(sequence=1, code_delta=pb.CodeDelta(offset=0, text="<h1>")),
        pb.GenerationEvent(sequence=2, event_id="t0", thinking_delta=pb.TextDelta(text="a")),
        pb.GenerationEvent(sequence=3, event_id="t0", thinking_delta=pb.TextDelta(text="b")),
    ]
    for e in seen:  # a resume's silent catch-up up to afterSequence=3
        b.on_event(e)
    assert b.resync() == [{"type": "setCode", "variantIndex": 0, "value": "<h1>", "seq": 1}]
    after = pb.GenerationEvent(sequence=4, event_id="t0", thinking_delta=pb.TextDelta(text="c"))
    assert b.on_event(after) == []
    assert b.on_timer() == [
        {"type": "thinking", "variantIndex": 0, "value": "c", "eventId": "t0", "seq": 4}
    ]


def test_usage_is_a_frame_of_its_own_per_turn() -> None:
    b = builder(Clock())
    b.on_event(event(1, "assistant-1-1", assistant_delta=pb.TextDelta(text="hi")))
    usage = common_pb2.Usage(
        input_tokens=50, output_tokens=40, total_tokens=90, cost_usd=0.5, priced=True
    )
    frames = b.on_event(event(1, usage=usage))
    # Pending text leaves first: the turn's usage comes after the turn's words.
    assert [f["type"] for f in frames] == ["assistant", "usage"]
    assert frames[1] == {
        "type": "usage",
        "variantIndex": 1,
        "data": {
            "inputTokens": 50,
            "outputTokens": 40,
            "cacheReadTokens": 0,
            "cacheWriteTokens": 0,
            "totalTokens": 90,
            "costUsd": 0.5,
            "priced": True,
        },
    }


def test_an_update_whose_file_opens_empty_never_sends_an_empty_set_code() -> None:
    clock = Clock()
    b = builder(clock)
    old, new = "<html><body>old page</body></html>", "<html><body>new page</body></html>"
    stream = [
        event(0, code_snapshot=pb.CodeSnapshot(path="index.html", content=old)),
        event(0, "c1", tool_start=pb.ToolStart(name="create_file")),
        # The content string has opened and holds nothing yet (an agent that forwards it).
        event(0, "c1", code_delta=pb.CodeDelta(offset=0, text="")),
        event(0, "c1", code_delta=pb.CodeDelta(offset=0, text=new[:12])),
        event(0, "c1", code_delta=pb.CodeDelta(offset=12, text=new[12:])),
        event(0, "c1", code_snapshot=pb.CodeSnapshot(path="index.html", content=new)),
        event(0, "c1", tool_result=pb.ToolResult(name="create_file", ok=True)),
        event(0, variant_complete=pb.VariantComplete()),
    ]
    frames = []
    for e in stream:
        frames += b.on_event(e)
        clock.now += 0.01
        frames += b.on_timer()
    set_codes = [f["value"] for f in frames if f["type"] == "setCode"]
    assert set_codes == [old, new[:12], new]


def test_an_empty_file_still_reaches_the_browser_as_a_snapshot() -> None:
    b = builder(Clock())
    b.on_event(event(0, code_snapshot=pb.CodeSnapshot(path="index.html", content="<p>a</p>")))
    assert b.on_event(event(0, code_delta=pb.CodeDelta(offset=0, text=""))) == []
    assert b.flush_all() == []
    emptied = b.on_event(event(0, code_snapshot=pb.CodeSnapshot(path="index.html", content="")))
    assert emptied == [{"type": "setCode", "variantIndex": 0, "value": ""}]


def test_a_timer_that_fires_a_little_early_still_sends_the_pending_code() -> None:
    # uvloop fires timers up to ~1.5 ms before time.monotonic() reaches their time: a
    # change held to the exact time made the relay's timer loop wake again and again.
    clock = Clock()
    b = builder(clock)
    b.on_event(event(0, "c", code_delta=pb.CodeDelta(offset=0, text="<html>")))
    assert b.on_event(event(0, "c", code_delta=pb.CodeDelta(offset=6, text="<body>"))) == []
    due = b.next_due()
    assert due is not None
    clock.now = due - 0.0015
    assert b.on_timer() == [{"type": "setCode", "variantIndex": 0, "value": "<html><body>"}]
    assert b.next_due() is None


# Every frame type upstream's UI acts on (docs/browser-protocol.md); it drops the others.
UPSTREAM_TYPES = {
    "variantCount", "status", "variantModels", "thinking", "assistant", "toolStart",
    "toolResult", "setCode", "variantComplete", "variantError", "error", "chunk",
}  # fmt: skip


def test_fidelity_is_a_frame_of_its_own_that_upstream_drops() -> None:
    b = builder(Clock())
    scored = common_pb2.Fidelity(
        image_index=0, viewport_width=1000, block_match=0.9, text=1.0, position=0.5, color=0.75,
        visual=0.25, path="pricing.html",
        regions=[common_pb2.FidelityRegion(
            x=60, y=120, width=300, height=28, expected_text="Fresh bread",
            actual_text="Stale cake", issue="text",
        )],
    )  # fmt: skip
    unavailable = common_pb2.Fidelity(image_index=1, unavailable_reason="no render: timed out")
    frames = [*b.on_event(event(2, fidelity=scored)), *b.on_event(event(2, fidelity=unavailable))]
    assert frames == [
        {
            "type": "fidelity",
            "variantIndex": 2,
            "data": {
                "imageIndex": 0,
                "viewportWidth": 1000,
                "unavailableReason": "",
                "page": "pricing.html",
                "blockMatch": 0.9,
                "text": 1.0,
                "position": 0.5,
                "color": 0.75,
                "visual": 0.25,
                "regions": [
                    {
                        "x": 60,
                        "y": 120,
                        "width": 300,
                        "height": 28,
                        "expectedText": "Fresh bread",
                        "actualText": "Stale cake",
                        "issue": "text",
                    }
                ],
            },
        },
        {
            "type": "fidelity",
            "variantIndex": 2,
            "data": {
                "imageIndex": 1,
                "viewportWidth": 0,
                "unavailableReason": "no render: timed out",
                "page": "",
                # Not computed is null, never a zero that looks like a score.
                "blockMatch": None,
                "text": None,
                "position": None,
                "color": None,
                "visual": None,
                "regions": [],
            },
        },
    ]
    # Upstream's UI has no case for it: nothing it knows changes (no code, no status).
    assert not {f["type"] for f in frames} & UPSTREAM_TYPES


def test_accessibility_is_a_frame_of_its_own_that_upstream_drops() -> None:
    b = builder(Clock())
    node = common_pb2.AccessibilityNode(selector="main > img", html='<img src="a.png">')
    violation = common_pb2.AccessibilityViolation(
        rule_id="image-alt", impact="critical", help="Images must have alternative text",
        help_url="https://dequeuniversity.com/rules/axe/4.14/image-alt", node_count=1,
        nodes=[node],
    )  # fmt: skip
    checked = common_pb2.Accessibility(
        viewport_width=390, path="index.html", score=0.75, violations=[violation],
        rules_passed=20, engine="axe-core 4.14.1",
    )  # fmt: skip
    unavailable = common_pb2.Accessibility(viewport_width=1000, unavailable_reason="no render")
    frames = [
        *b.on_event(event(1, accessibility=checked)),
        *b.on_event(event(1, accessibility=unavailable)),
    ]
    assert all(f["type"] == "accessibility" not in UPSTREAM_TYPES for f in frames)
    assert [f["data"] for f in frames] == [
        {
            "viewportWidth": 390,
            "page": "index.html",
            "score": 0.75,
            "rulesPassed": 20,
            "engine": "axe-core 4.14.1",
            "unavailableReason": "",
            "violations": [
                {
                    "ruleId": "image-alt",
                    "impact": "critical",
                    "help": "Images must have alternative text",
                    "helpUrl": "https://dequeuniversity.com/rules/axe/4.14/image-alt",
                    "nodeCount": 1,
                    "nodes": [{"selector": "main > img", "html": '<img src="a.png">'}],
                }
            ],
        },
        {
            "viewportWidth": 1000,
            "page": "",
            # Not checked is null, never a zero that looks like a score.
            "score": None,
            "rulesPassed": 0,
            "engine": "",
            "unavailableReason": "no render",
            "violations": [],
        },
    ]


def test_unrequested_changes_are_a_frame_of_their_own() -> None:
    b = builder(Clock())
    box = common_pb2.ChangedRegion(x=0, y=400, width=320, height=32)
    changed = common_pb2.ChangedRegion(
        x=40, y=500, width=300, height=32, before_text="Visit us", after_text="Closed"
    )
    report = pb.UnrequestedChanges(
        check=0,
        summary="1 region changed",
        widths=[
            common_pb2.ChangedWidth(viewport_width=1280, regions=[changed], target=box),
            common_pb2.ChangedWidth(viewport_width=390, unavailable_reason="no render"),
        ],
    )
    [frame] = b.on_event(event(0, unrequested_changes=report))
    assert frame == {
        "type": "unrequestedChanges",
        "variantIndex": 0,
        "data": {
            "check": 0,
            "summary": "1 region changed",
            "widths": [
                {
                    "viewportWidth": 1280,
                    "unavailableReason": "",
                    "target": {"x": 0, "y": 400, "width": 320, "height": 32},
                    "regions": [
                        {
                            "x": 40,
                            "y": 500,
                            "width": 300,
                            "height": 32,
                            "beforeText": "Visit us",
                            "afterText": "Closed",
                        }
                    ],
                },
                {
                    "viewportWidth": 390,
                    "unavailableReason": "no render",
                    "target": None,
                    "regions": [],
                },
            ],
        },
    }
    assert frame["type"] not in UPSTREAM_TYPES


def test_a_refinement_round_is_a_frame_of_its_own() -> None:
    b = builder(Clock())
    scored = pb.RefineRound(round=2, score=0.6, rolled_back=True)
    frames = [
        *b.on_event(event(1, refine_round=scored)),
        *b.on_event(event(1, refine_round=pb.RefineRound(round=0))),
    ]
    assert frames == [
        {
            "type": "refineRound",
            "variantIndex": 1,
            "data": {"round": 2, "score": 0.6, "rolledBack": True},
        },
        {
            "type": "refineRound",
            "variantIndex": 1,
            "data": {"round": 0, "score": None, "rolledBack": False},
        },
    ]
    assert not {f["type"] for f in frames} & UPSTREAM_TYPES
