"""`s2c generate` shows each option's fidelity score (docs/fidelity.md): in the summary
table, in the step log of a non-terminal run and in `--json`'s summary."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2

from services.cli_view import GenerationView, StepLog, summary_json, summary_table


def event(variant: int, **payload: Any) -> pb.GenerationEvent:
    return pb.GenerationEvent(generation_id="g", variant_index=variant, **payload)


def test_the_score_is_in_the_table_the_step_log_and_the_json() -> None:
    view = GenerationView()
    console = Console(record=True, width=200, color_system=None)
    log = StepLog(view, console)
    scored = common_pb2.Fidelity(
        image_index=0, viewport_width=1000, block_match=0.91, text=1.0, position=0.5,
        color=0.75, visual=0.25,
    )  # fmt: skip
    unavailable = common_pb2.Fidelity(image_index=0, unavailable_reason="no render: timed out")
    for e in (
        event(0, variant_count=pb.VariantCount(count=2, models=["demo", "demo"])),
        event(0, variant_complete=pb.VariantComplete()),
        event(0, fidelity=scored),
        event(1, variant_complete=pb.VariantComplete()),
        event(1, fidelity=unavailable),
    ):
        view.apply(e)
        log.event(e)
    steps = console.export_text()
    assert "[variant 1] fidelity image 1: 0.91/1.00/0.50/0.75/0.25" in steps
    assert "[variant 2] fidelity image 1: not scored (no render: timed out)" in steps
    console.print(summary_table(view))
    table = console.export_text()
    assert "fidelity (block/text/pos/color/visual)" in table
    assert "image 1: 0.91/1.00/0.50/0.75/0.25" in table
    variants = summary_json(view)["summary"]["variants"]
    assert variants[0]["fidelity"] == [
        {
            "image_index": 0,
            "viewport_width": 1000,
            "block_match": 0.91,
            "text": 1.0,
            "position": 0.5,
            "color": 0.75,
            "visual": 0.25,
            "unavailable_reason": "",
        }
    ]
    assert variants[1]["fidelity"][0]["text"] is None
    assert variants[1]["fidelity"][0]["unavailable_reason"] == "no render: timed out"


def test_the_accessibility_check_is_a_column_a_step_and_in_the_json() -> None:
    view = GenerationView()
    console = Console(record=True, width=200, color_system=None)
    log = StepLog(view, console)
    violations = [
        common_pb2.AccessibilityViolation(rule_id="image-alt", impact="critical", node_count=2),
        common_pb2.AccessibilityViolation(rule_id="color-contrast", impact="serious"),
    ]
    checked = common_pb2.Accessibility(viewport_width=1000, score=0.6, violations=violations)
    unavailable = common_pb2.Accessibility(viewport_width=390, unavailable_reason="no render")
    for e in (
        event(0, variant_count=pb.VariantCount(count=2, models=["demo", "demo"])),
        event(0, variant_complete=pb.VariantComplete()),
        event(0, accessibility=checked),
        event(1, variant_complete=pb.VariantComplete()),
        event(1, accessibility=unavailable),
    ):
        view.apply(e)
        log.event(e)
    steps = console.export_text()
    assert "[variant 1] accessibility 1000px: 0.60 (1 critical, 1 serious)" in steps
    assert "[variant 2] accessibility 390px: not checked (no render)" in steps
    console.print(summary_table(view))
    table = console.export_text()
    assert "accessibility" in table
    assert "1000px: 0.60 (1 critical, 1 serious)" in table
    variants = summary_json(view)["summary"]["variants"]
    assert variants[0]["accessibility"] == [
        {
            "viewport_width": 1000,
            "page": "",
            "score": 0.6,
            "violations": {
                "critical": ["image-alt"],
                "serious": ["color-contrast"],
                "moderate": [],
                "minor": [],
            },
            "unavailable_reason": "",
        }
    ]
    assert variants[1]["accessibility"][0]["score"] is None


def test_the_refinement_rounds_are_in_the_table_and_the_json() -> None:
    view = GenerationView()
    console = Console(record=True, width=200, color_system=None)
    log = StepLog(view, console)
    for e in (
        event(0, variant_count=pb.VariantCount(count=2, models=["m", "m"])),
        event(0, refine_round=pb.RefineRound(round=0, score=0.67)),
        event(0, status=pb.Status(text="Refine round 1: 0.67 → 0.82.")),
        event(0, refine_round=pb.RefineRound(round=1, score=0.82)),
        event(0, refine_round=pb.RefineRound(round=2, score=0.6, rolled_back=True)),
        event(0, variant_complete=pb.VariantComplete()),
        event(1, variant_complete=pb.VariantComplete()),
    ):
        view.apply(e)
        log.event(e)
    # The step log prints each round's status line as the agent words it.
    assert "[variant 1] Refine round 1: 0.67 → 0.82." in console.export_text()
    console.print(summary_table(view))
    table = console.export_text()
    assert "refinement" in table
    assert "0.67 → 0.82 → 0.60 (rolled back)" in table
    variants = summary_json(view)["summary"]["variants"]
    assert variants[0]["refine_rounds"] == [
        {"round": 0, "score": 0.67, "rolled_back": False},
        {"round": 1, "score": 0.82, "rolled_back": False},
        {"round": 2, "score": 0.6, "rolled_back": True},
    ]
    assert variants[1]["refine_rounds"] == []
