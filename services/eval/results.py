"""`DIR/results.json`: what an eval has finished so far, saved after every item.

The file is rewritten whole and atomically (a temporary file renamed over it), so a run
stopped at any moment, Ctrl-C included, leaves the last complete state; the next run reads
it and skips every item that finished with the same reference content.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from services.fidelity.metrics import METRICS

VERSION = 1
BLOCK_METRICS = METRICS[:4]
# axe-core's score of the generated page (docs/accessibility.md): beside the five
# fidelity metrics, for every item.
ACCESSIBILITY = "accessibility"
EVAL_METRICS = (*METRICS, ACCESSIBILITY)


class ResultsError(Exception):
    """An existing results.json cannot be resumed from."""


@dataclass
class ItemResult:
    status: str  # "ok" or "failed"
    error: str = ""
    scores: dict[str, float | None] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    code: str = ""  # the generated page, relative to DIR
    render: str = ""  # its screenshot, relative to DIR
    digest: str = ""  # the reference content it was scored against
    generation_id: str = ""


@dataclass
class ModelSummary:
    model: str
    done: int = 0
    failed: int = 0
    means: dict[str, float | None] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0


def slug(model: str) -> str:
    """A file name for a model id: `demo` as it is, `gpt-5.5 (high thinking)` →
    `gpt-5.5-high-thinking-` and a short hash of the id."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-") or "model"
    if clean == model:
        return clean
    # Two ids that clean to the same name (`a b`, `a/b`) must not share files.
    return f"{clean}-{hashlib.sha256(model.encode()).hexdigest()[:6]}"


@dataclass
class Results:
    path: Path
    set_name: str = ""
    stack: str = ""
    models: list[str] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)  # id, kind, viewport, html…
    results: dict[str, dict[str, ItemResult]] = field(default_factory=dict)
    updated: str = ""

    @classmethod
    def open(cls, path: Path) -> Results:
        if not path.exists():
            return cls(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            results = {
                item: {model: ItemResult(**r) for model, r in by_model.items()}
                for item, by_model in data["results"].items()
            }
            if data.get("version") != VERSION:
                raise ValueError(f"version {data.get('version')!r}, expected {VERSION}")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ResultsError(
                f"{path} cannot be resumed from ({exc}); choose another --out or remove it"
            ) from None
        return cls(
            path,
            set_name=str(data.get("set", "")),
            stack=str(data.get("stack", "")),
            models=list(data.get("models", [])),
            items=list(data.get("items", [])),
            results=results,
        )

    def done(self, item: str, model: str, digest: str) -> bool:
        """Finished with this reference content; a failed item is tried again."""
        r = self.results.get(item, {}).get(model)
        return r is not None and r.status == "ok" and r.digest == digest

    def put(self, item: str, model: str, result: ItemResult) -> None:
        self.results.setdefault(item, {})[model] = result

    def get(self, item: str, model: str) -> ItemResult | None:
        return self.results.get(item, {}).get(model)

    def save(self) -> None:
        self.updated = datetime.now(UTC).isoformat(timespec="seconds")
        data = {
            "version": VERSION,
            "set": self.set_name,
            "stack": self.stack,
            "models": self.models,
            "updated": self.updated,
            "items": self.items,
            "results": {
                item: {model: asdict(r) for model, r in by_model.items()}
                for item, by_model in self.results.items()
            },
            "summary": [asdict(s) for s in self.summary()],
        }
        write_atomic(self.path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    def summary(self) -> list[ModelSummary]:
        """Per model: the mean of each metric over the items it finished or failed (a
        failed item scores 0 on every metric that applies to it), tokens, cost, time."""
        html_items = {i["id"] for i in self.items if i.get("html")}
        out = []
        for model in self.models:
            s = ModelSummary(model)
            values: dict[str, list[float]] = {m: [] for m in EVAL_METRICS}
            for item in self.items:
                r = self.get(item["id"], model)
                if r is None:
                    continue
                s.done += r.status == "ok"
                s.failed += r.status != "ok"
                s.input_tokens += r.input_tokens
                s.output_tokens += r.output_tokens
                s.cost_usd += r.cost_usd
                s.seconds += r.seconds
                for metric in EVAL_METRICS:
                    blocks = item["id"] in html_items or item.get("ocr")
                    if metric in BLOCK_METRICS and not blocks:
                        continue
                    value = (r.scores or {}).get(metric) if r.status == "ok" else 0.0
                    if value is not None:
                        values[metric].append(value)
            s.means = {m: (sum(v) / len(v) if v else None) for m, v in values.items()}
            out.append(s)
        return out


def write_atomic(path: Path, text: str | bytes) -> None:
    """Replaces `path` whole: a reader (or a crash) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8") if isinstance(text, str) else text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
