"""An `Accessibility` message as the clients show it: the gateway's `accessibility` frame,
`s2c generate`'s column, step line and `--json` (docs/accessibility.md)."""

from __future__ import annotations

from typing import Any

from s2c.common.v1 import common_pb2

# The impacts a client counts, most severe first (axe-core's four).
IMPACTS = ("critical", "serious", "moderate", "minor")


def accessibility_frame(check: common_pb2.Accessibility) -> dict[str, Any]:
    """An `accessibility` frame's data: `score` null when not checked."""
    return {
        "viewportWidth": check.viewport_width,
        "page": check.path,
        "score": check.score if check.HasField("score") else None,
        "rulesPassed": check.rules_passed,
        "engine": check.engine,
        "unavailableReason": check.unavailable_reason,
        "violations": [
            {
                "ruleId": v.rule_id,
                "impact": v.impact,
                "help": v.help,
                "helpUrl": v.help_url,
                "nodeCount": v.node_count,
                "nodes": [{"selector": n.selector, "html": n.html} for n in v.nodes],
            }
            for v in check.violations
        ],
    }


def accessibility_json(check: common_pb2.Accessibility) -> dict[str, Any]:
    """A check in `s2c generate --json`'s summary: rule ids by impact, no elements."""
    return {
        "viewport_width": check.viewport_width,
        "page": check.path,
        "score": check.score if check.HasField("score") else None,
        "violations": {i: [v.rule_id for v in check.violations if v.impact == i] for i in IMPACTS},
        "unavailable_reason": check.unavailable_reason,
    }


def accessibility_text(check: common_pb2.Accessibility) -> str:
    """`1000px: 0.70 (1 critical, 1 serious)`, or why it was not checked."""
    head = f"{check.path + ' ' if check.path else ''}{check.viewport_width}px"
    if not check.HasField("score"):
        return f"{head}: not checked ({check.unavailable_reason or 'unknown'})"
    counts = [(sum(v.impact == i for v in check.violations), i) for i in IMPACTS]
    found = ", ".join(f"{n} {impact}" for n, impact in counts if n)
    return f"{head}: {check.score:.2f}" + (f" ({found})" if found else "")
