"""Accessibility checks ⇄ the run store's JSON column (docs/accessibility.md); their proto
is services/common/accessibility.py's."""

from __future__ import annotations

import json

from services.agent import events as ev
from services.common.accessibility import A11yNode, A11yViolation


def accessibility_column(checks: tuple[ev.Accessibility, ...]) -> str:
    """The run store's column: a JSON list, read and written whole."""
    return json.dumps(
        [
            {
                "viewport_width": c.viewport_width,
                "path": c.path,
                "score": c.score,
                "violations": [
                    [
                        v.rule_id,
                        v.impact,
                        v.help,
                        v.help_url,
                        v.node_count,
                        [[n.selector, n.html] for n in v.nodes],
                    ]
                    for v in c.violations
                ],
                "rules_passed": c.rules_passed,
                "engine": c.engine,
                "unavailable_reason": c.unavailable_reason,
            }
            for c in checks
        ]
    )


def accessibility_from_column(column: str) -> tuple[ev.Accessibility, ...]:
    return tuple(
        ev.Accessibility(
            int(c["viewport_width"]),
            str(c["path"]),
            None if c["score"] is None else float(c["score"]),
            tuple(
                A11yViolation(
                    rule, impact, help_, url, int(count), tuple(A11yNode(s, h) for s, h in nodes)
                )
                for rule, impact, help_, url, count, nodes in c["violations"]
            ),
            int(c["rules_passed"]),
            str(c["engine"]),
            str(c["unavailable_reason"]),
        )
        for c in json.loads(column or "[]")
    )
