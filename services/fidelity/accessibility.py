"""A page's accessibility check: axe-core run in the page the fidelity score renders
(no second page load), on the WCAG 2.x A and AA rules (docs/accessibility.md).

axe-core is vendored like the pages' runtimes (vendor/package.json, checked against
vendor/manifest.json); it is read through the catalog, so a changed copy is refused, and
injected as a script: it needs no network. It runs after the screenshot is taken: axe
scrolls elements into view for its contrast checks, which must not move what the score
compares.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from services.common.accessibility import A11yNode, A11yReport, A11yViolation
from services.common.vendor import VendorCatalog, VendorError

AXE_FILE = "axe-core/axe.min.js"
# axe's tags for WCAG 2.0, 2.1 and 2.2, levels A and AA (its `best-practice` rules and
# the AAA ones are left out: the bar generated pages are held to is WCAG 2.2 AA).
WCAG_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa")
IMPACTS = ("critical", "serious", "moderate", "minor")
# What one violated rule takes off the score of 1, by its impact (a rule counts once,
# however many elements break it: forty grey labels are one fix, not forty).
PENALTY: Mapping[str, float] = {"critical": 0.25, "serious": 0.15, "moderate": 0.05, "minor": 0.02}
# Enough elements per rule to find each kind of offender, and bounded: a page of 5,000
# unlabelled cells would otherwise make an event of megabytes.
MAX_NODES = 10
MAX_HTML_CHARS = 300

# Runs in the page: defines axe, runs it and returns its violations, compactly. Defined
# every time, never taken from the page: a page's own `axe` global would answer for it.
_RUN = """
async () => {
  %(source)s
  const result = await window.axe.run(document, {
    runOnly: {type: "tag", values: %(tags)s},
    resultTypes: ["violations"],
  });
  return {
    engine: "axe-core " + result.testEngine.version,
    passes: result.passes.length,
    violations: result.violations.map((v) => ({
      id: v.id,
      impact: v.impact || "",
      help: v.help,
      helpUrl: v.helpUrl,
      count: v.nodes.length,
      nodes: v.nodes.slice(0, %(max_nodes)d).map((n) => ({
        target: n.target.map((t) => (Array.isArray(t) ? t.join(" >>> ") : t)).join(" "),
        html: n.html.slice(0, %(max_html)d),
      })),
    })),
  };
}
"""


class AxeScript:
    """The page script that runs axe-core, built once from the vendored copy."""

    def __init__(self, catalog: VendorCatalog | None) -> None:
        self.expression = ""
        self.unavailable = ""
        if catalog is None:
            self.unavailable = "axe-core is not installed on the tool worker (vendor/)"
            return
        try:
            source = catalog.read(AXE_FILE).body.decode("utf-8")
        except (OSError, VendorError) as exc:
            self.unavailable = f"axe-core is not usable on the tool worker: {exc}"
            return
        self.expression = _RUN % {
            "source": source,
            "tags": json.dumps(list(WCAG_TAGS)),
            "max_nodes": MAX_NODES,
            "max_html": MAX_HTML_CHARS,
        }


def score_of(violations: Sequence[A11yViolation]) -> float:
    """1 minus each violated rule's penalty by impact (PENALTY), at least 0."""
    lost = sum(PENALTY.get(v.impact, PENALTY["minor"]) for v in violations)
    return round(max(0.0, 1.0 - lost), 4)


def report_from_js(data: Any, width: int, path: str = "") -> A11yReport:
    """The page script's answer as a report; a malformed one is unavailable, not a score."""
    try:
        violations = tuple(
            A11yViolation(
                str(v["id"]),
                str(v["impact"]),
                str(v["help"]),
                str(v["helpUrl"]),
                int(v["count"]),
                tuple(A11yNode(str(n["target"]), str(n["html"])) for n in v["nodes"]),
            )
            for v in data["violations"]
        )
        engine, passes = str(data["engine"]), int(data["passes"])
    except (KeyError, TypeError, ValueError) as exc:
        return A11yReport(width, path, unavailable_reason=f"axe-core answered oddly: {exc!r}")
    order = {impact: i for i, impact in enumerate(IMPACTS)}
    violations = tuple(sorted(violations, key=lambda v: (order.get(v.impact, 9), v.rule_id)))
    return A11yReport(width, path, score_of(violations), violations, passes, engine)


def report_json(report: A11yReport) -> dict[str, Any]:
    """The report as the `check_accessibility` tool gives it to the model."""
    return {
        "page": report.path,
        "viewport_width": report.viewport_width,
        "score": report.score,
        "violations": [
            {
                "rule_id": v.rule_id,
                "impact": v.impact,
                "help": v.help,
                "elements": v.node_count,
                "nodes": [{"selector": n.selector, "html": n.html} for n in v.nodes],
            }
            for v in report.violations
        ],
    }
