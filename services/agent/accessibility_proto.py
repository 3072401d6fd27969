"""Accessibility checks ⇄ their proto and the run store's JSON (docs/accessibility.md)."""

from __future__ import annotations

import json

from s2c.common.v1 import common_pb2

from services.agent import events as ev


def accessibility_to_proto(check: ev.Accessibility) -> common_pb2.Accessibility:
    out = common_pb2.Accessibility(
        viewport_width=check.viewport_width,
        path=check.path,
        rules_passed=check.rules_passed,
        engine=check.engine,
        unavailable_reason=check.unavailable_reason,
        violations=[
            common_pb2.AccessibilityViolation(
                rule_id=v.rule_id,
                impact=v.impact,
                help=v.help,
                help_url=v.help_url,
                node_count=v.node_count,
                nodes=[common_pb2.AccessibilityNode(selector=s, html=h) for s, h in v.nodes],
            )
            for v in check.violations
        ],
    )
    if check.score is not None:
        out.score = check.score
    return out


def accessibility_from_proto(message: common_pb2.Accessibility) -> ev.Accessibility:
    return ev.Accessibility(
        message.viewport_width,
        message.path,
        message.score if message.HasField("score") else None,
        tuple(
            ev.AccessibilityViolation(
                v.rule_id,
                v.impact,
                v.help,
                v.help_url,
                v.node_count,
                tuple((n.selector, n.html) for n in v.nodes),
            )
            for v in message.violations
        ),
        message.rules_passed,
        message.engine,
        message.unavailable_reason,
    )


def accessibility_column(checks: tuple[ev.Accessibility, ...]) -> str:
    """The run store's column: a JSON list, read and written whole."""
    return json.dumps(
        [
            {
                "viewport_width": c.viewport_width,
                "path": c.path,
                "score": c.score,
                "violations": [
                    [v.rule_id, v.impact, v.help, v.help_url, v.node_count, v.nodes]
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
                ev.AccessibilityViolation(
                    rule, impact, help_, url, int(count), tuple((s, h) for s, h in nodes)
                )
                for rule, impact, help_, url, count, nodes in c["violations"]
            ),
            int(c["rules_passed"]),
            str(c["engine"]),
            str(c["unavailable_reason"]),
        )
        for c in json.loads(column or "[]")
    )
