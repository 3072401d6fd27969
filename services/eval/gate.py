"""`s2c eval --save-baseline FILE` and `--gate FILE`: an eval's scores kept as a baseline,
and a later run held to it, for CI of prompts, models and stacks.

A baseline holds each item's metrics per model, as the run scored them. The gate compares
a run with it item by item: every metric the baseline has that dropped by more than the
tolerance, or is missing now (the item failed, or was not run), is a regression, named.
Items the baseline does not know are not judged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from services.eval.results import EVAL_METRICS as METRICS
from services.eval.results import Results, write_atomic

VERSION = 1
DEFAULT_TOLERANCE = 0.02

# item → model → metric → score
Scores = dict[str, dict[str, dict[str, float]]]


class GateError(Exception):
    """A baseline file that cannot be read."""


@dataclass(frozen=True, slots=True)
class Regression:
    item: str
    model: str
    metric: str
    before: float
    after: float | None  # None: no score now (the item failed or did not run)

    def __str__(self) -> str:
        where = f"{self.item} · {self.model} · {self.metric}"
        if self.after is None:
            return f"{where}: {self.before:.3f} in the baseline, no score now"
        return f"{where}: {self.before:.3f} → {self.after:.3f} ({self.after - self.before:+.3f})"


def scores_of(results: Results) -> Scores:
    """Every metric of every item a model finished."""
    out: Scores = {}
    for item, by_model in results.results.items():
        for model, result in by_model.items():
            if result.status != "ok" or not result.scores:
                continue
            kept = {m: v for m, v in result.scores.items() if m in METRICS and v is not None}
            if kept:
                out.setdefault(item, {})[model] = kept
    return out


def save_baseline(results: Results, path: Path) -> None:
    data = {"version": VERSION, "set": results.set_name, "scores": scores_of(results)}
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def load_baseline(path: Path) -> Scores:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != VERSION:
            raise ValueError(f"version {data.get('version')!r}, expected {VERSION}")
        scores: Scores = {
            str(item): {
                # A metric not computed (null, as results.json writes it) is not held.
                str(model): {str(m): float(v) for m, v in metrics.items() if v is not None}
                for model, metrics in by_model.items()
            }
            for item, by_model in data["scores"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise GateError(f"baseline {path} cannot be read ({exc})") from None
    return scores


def regressions(baseline: Scores, results: Results, tolerance: float) -> list[Regression]:
    """Each metric of the baseline that dropped by more than `tolerance`, or has no score
    now, for the models this run evaluated; items in the baseline's order, metrics in
    the report's."""
    now = scores_of(results)
    found: list[Regression] = []
    for item, by_model in baseline.items():
        for model, metrics in by_model.items():
            if model not in results.models:
                continue
            current = now.get(item, {}).get(model, {})
            for metric in (m for m in METRICS if m in metrics):
                before, after = metrics[metric], current.get(metric)
                if after is None or before - after > tolerance:
                    found.append(Regression(item, model, metric, before, after))
    return found
