"""An axe-core check of one page at one width: the type the tool workers produce, the
agent streams and stores and `s2c eval` reports, and its proto (docs/accessibility.md)."""

from __future__ import annotations

from dataclasses import dataclass

from s2c.common.v1 import common_pb2


@dataclass(frozen=True, slots=True)
class A11yNode:
    selector: str  # axe's CSS selector of the element
    html: str  # its opening HTML, at most MAX_HTML_CHARS (services/fidelity/accessibility.py)


@dataclass(frozen=True, slots=True)
class A11yViolation:
    rule_id: str  # axe's rule id, e.g. `color-contrast`, `image-alt`
    impact: str  # critical, serious, moderate or minor
    help: str
    help_url: str
    node_count: int  # every element that breaks it; `nodes` holds the first MAX_NODES
    nodes: tuple[A11yNode, ...] = ()


@dataclass(frozen=True, slots=True)
class A11yReport:
    """The check of one page at one width: the score and violations, or why there are
    none (`unavailable_reason`; `score` is then None, never a 0 that looks like one)."""

    viewport_width: int
    path: str = ""  # the project file checked; empty: the entry page
    score: float | None = None
    violations: tuple[A11yViolation, ...] = ()
    rules_passed: int = 0
    engine: str = ""
    unavailable_reason: str = ""


def report_to_proto(report: A11yReport) -> common_pb2.Accessibility:
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


def report_from_proto(message: common_pb2.Accessibility) -> A11yReport:
    return A11yReport(
        message.viewport_width,
        message.path,
        message.score if message.HasField("score") else None,
        tuple(
            A11yViolation(
                v.rule_id,
                v.impact,
                v.help,
                v.help_url,
                v.node_count,
                tuple(A11yNode(n.selector, n.html) for n in v.nodes),
            )
            for v in message.violations
        ),
        message.rules_passed,
        message.engine,
        message.unavailable_reason,
    )
