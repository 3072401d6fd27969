"""The eval gate's judgement (services/eval/gate.py), on results built in memory."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from services.eval import cli
from services.eval.gate import GateError, Regression, load_baseline, regressions, save_baseline
from services.eval.results import ItemResult, Results

FIVE = {"block_match": 0.9, "text": 0.95, "position": 0.9, "color": 0.8, "visual": 0.7}


def results(path: Path, **by_item: ItemResult) -> Results:
    run = Results(path / "results.json", set_name="s", models=["m"])
    for item, result in by_item.items():
        run.put(item, "m", result)
    return run


def ok(**scores: float | None) -> ItemResult:
    return ItemResult("ok", scores={**FIVE, **scores})


def test_a_saved_baseline_holds_the_run_it_came_from(tmp_path: Path) -> None:
    run = results(tmp_path, a=ok(), b=ok(visual=None), c=ItemResult("failed", error="x"))
    save_baseline(run, tmp_path / "base.json")
    baseline = load_baseline(tmp_path / "base.json")
    # A failed item has no scores to hold; a metric not computed is left out.
    without_visual = {m: v for m, v in FIVE.items() if m != "visual"}
    assert baseline == {"a": {"m": FIVE}, "b": {"m": without_visual}}
    assert regressions(baseline, run, 0.02) == []


def test_drops_past_the_tolerance_and_missing_scores_are_named(tmp_path: Path) -> None:
    save_baseline(results(tmp_path, a=ok(), b=ok()), tmp_path / "base.json")
    baseline = load_baseline(tmp_path / "base.json")
    later = results(tmp_path, a=ok(text=0.92, color=0.77), b=ItemResult("failed", error="x"))
    found = regressions(baseline, later, 0.02)
    # text dropped 0.03 (> 0.02): named; color 0.03 too; b failed: each metric is missing.
    assert [(r.item, r.metric) for r in found] == [
        ("a", "text"),
        ("a", "color"),
        *(("b", m) for m in FIVE),
    ]
    assert str(found[0]) == "a · m · text: 0.950 → 0.920 (-0.030)"
    assert str(found[2]) == "b · m · block_match: 0.900 in the baseline, no score now"
    assert regressions(baseline, later, 0.05)[0] == Regression("b", "m", "block_match", 0.9, None)
    # A model this run did not evaluate is not judged.
    other = Results(tmp_path / "r.json", models=["n"])
    assert regressions(baseline, other, 0.02) == []


def test_an_unreadable_baseline_says_why(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"version": 2, "scores": {}}', "utf-8")
    with pytest.raises(GateError, match="version 2, expected 1"):
        load_baseline(tmp_path / "bad.json")
    with pytest.raises(GateError, match="cannot be read"):
        load_baseline(tmp_path / "missing.json")


def test_the_command_refuses_an_unreadable_baseline_before_it_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.json").write_text("{", "utf-8")
    args = argparse.Namespace(
        set="basic",
        model=["demo"],
        out=str(tmp_path / "out"),
        agent="127.0.0.1:1",  # never reached: the baseline is read first
        stack="html_tailwind",
        timeout=60.0,
        gate=str(tmp_path / "bad.json"),
        tolerance=0.02,
        save_baseline=None,
    )
    assert cli.main(args) == cli.EXIT_USAGE
    assert f"baseline {tmp_path / 'bad.json'} cannot be read" in capsys.readouterr().err
