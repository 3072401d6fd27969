// Each option's accessibility, from the gateway's `accessibility` frames (our own frame
// type; docs/browser-protocol.md, the score in docs/accessibility.md): axe-core's check of
// a page at one width. A frame with `unavailableReason` is no check at all (shown as
// such, never as a score).

export const IMPACTS = ["critical", "serious", "moderate", "minor"];

function score(value) {
  const n = typeof value === "number" ? value : NaN;
  return Number.isFinite(n) && n >= 0 && n <= 1 ? n : null;
}

const text = (value) => (typeof value === "string" ? value : "");

/** The variant's checks (one per page and width) with one `accessibility` frame applied. */
export function addAccessibility(list, data) {
  const entry = {
    page: text(data?.page),
    viewportWidth: Number(data?.viewportWidth) || 0,
    score: score(data?.score),
    reason: text(data?.unavailableReason),
    violations: (Array.isArray(data?.violations) ? data.violations : []).map((v) => ({
      ruleId: text(v?.ruleId),
      impact: IMPACTS.includes(v?.impact) ? v.impact : "minor",
      help: text(v?.help),
      helpUrl: /^https:\/\//.test(text(v?.helpUrl)) ? v.helpUrl : "",
      nodeCount: Number(v?.nodeCount) || 0,
      nodes: (Array.isArray(v?.nodes) ? v.nodes : []).map((n) => ({ selector: text(n?.selector), html: text(n?.html) })),
    })),
  };
  const same = (e) => e.page === entry.page && e.viewportWidth === entry.viewportWidth;
  return [...(list ?? []).filter((e) => !same(e)), entry].sort((a, b) => a.page.localeCompare(b.page) || b.viewportWidth - a.viewportWidth);
}

/** How many violated rules of each impact over the checks. */
export function impactCounts(list) {
  const counts = Object.fromEntries(IMPACTS.map((i) => [i, 0]));
  for (const entry of list ?? []) for (const v of entry.violations) counts[v.impact] += 1;
  return counts;
}

const pct = (v) => `${Math.round(v * 100)}%`;

/** One check's heading line: where, and its score or why there is none. */
export function checkLine(entry) {
  const page = entry.page && entry.page !== "index.html" ? `${entry.page} ` : "";
  const head = `${page}${entry.viewportWidth ? `at ${entry.viewportWidth} px` : ""}`.trim() || "page";
  if (entry.score === null) return `${head}: not checked (${entry.reason || "unknown"})`;
  const n = entry.violations.length;
  return `${head}: ${pct(entry.score)}, ${n ? `${n} rule${n === 1 ? "" : "s"} broken` : "no violation"}`;
}

/** The badge: the lowest score of the checks and the most severe impact; null before any frame. */
export function formatAccessibility(list) {
  if (!list?.length) return null;
  const scores = list.map((e) => e.score).filter((s) => s !== null);
  const counts = impactCounts(list);
  const worst = IMPACTS.find((i) => counts[i] > 0) ?? "";
  const found = IMPACTS.filter((i) => counts[i]).map((i) => `${counts[i]} ${i}`).join(", ");
  return {
    text: scores.length ? `a11y ${pct(Math.min(...scores))}` : "a11y –",
    label: scores.length ? `Accessibility ${pct(Math.min(...scores))}${found ? `: ${found}` : ": no violation"}` : "Accessibility not checked",
    worst,
    available: scores.length > 0,
  };
}
