"""An accessibility report → its proto (the ScoreFidelity answer's `accessibility`)."""

from __future__ import annotations

from s2c.common.v1 import common_pb2

from services.fidelity.accessibility import A11yReport


def accessibility_proto(report: A11yReport) -> common_pb2.Accessibility:
    message = common_pb2.Accessibility(
        viewport_width=report.viewport_width,
        path=report.path,
        rules_passed=report.rules_passed,
        engine=report.engine,
        unavailable_reason=report.unavailable_reason,
        violations=[
            common_pb2.AccessibilityViolation(
                rule_id=v.rule_id,
                impact=v.impact,
                help=v.help,
                help_url=v.help_url,
                node_count=v.node_count,
                nodes=[
                    common_pb2.AccessibilityNode(selector=n.selector, html=n.html) for n in v.nodes
                ],
            )
            for v in report.violations
        ],
    )
    if report.score is not None:
        message.score = report.score
    return message
