// How close each option's page is to the input screenshot, from the gateway's `fidelity`
// frames (our own frame type; docs/browser-protocol.md, metrics in docs/eval.md). One
// frame per input image scored; a frame with `unavailableReason` is no score at all
// (shown as such, never as a zero).

const METRICS = [
  ["blockMatch", "block-match"],
  ["text", "text"],
  ["position", "position"],
  ["color", "color"],
  ["visual", "visual"],
];

function score(value) {
  const n = typeof value === "number" ? value : NaN;
  return Number.isFinite(n) && n >= 0 && n <= 1 ? n : null;
}

/** The variant's scores (one per image index) with one `fidelity` frame's data applied. */
export function addFidelity(list, data) {
  const index = Number.isInteger(data?.imageIndex) && data.imageIndex >= 0 ? data.imageIndex : 0;
  const entry = {
    imageIndex: index,
    viewportWidth: Number(data?.viewportWidth) || 0,
    reason: typeof data?.unavailableReason === "string" ? data.unavailableReason : "",
    page: typeof data?.page === "string" ? data.page : "",
  };
  for (const [key] of METRICS) entry[key] = score(data?.[key]);
  entry.regions = regionsOf(data?.regions);
  return [...(list ?? []).filter((e) => e.imageIndex !== index), entry].sort((a, b) => a.imageIndex - b.imageIndex);
}

/** The mean of an entry's metrics; null when it has none (unavailable). */
export function overall(entry) {
  if (entry.reason) return null;
  const values = METRICS.map(([key]) => entry[key]).filter((v) => v !== null);
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
}

/** A variant's overall score: the mean over its scored images; null when none scored. */
export function variantScore(list) {
  const scores = (list ?? []).map(overall).filter((v) => v !== null);
  return scores.length ? scores.reduce((a, b) => a + b, 0) / scores.length : null;
}

/** Index of the best-scoring variant, or null unless at least two have a score. */
export function bestVariant(lists) {
  let best = null;
  let scored = 0;
  lists.forEach((list, i) => {
    const s = variantScore(list);
    if (s === null) return;
    scored += 1;
    if (best === null || s > variantScore(lists[best])) best = i;
  });
  return scored >= 2 ? best : null;
}

const pct = (v) => (v === null ? "–" : `${Math.round(v * 100)}%`);

/** The badge text and its tooltip (every metric per image); null before any frame. */
export function formatFidelity(list) {
  if (!list?.length) return null;
  const total = variantScore(list);
  const lines = list.map((e) => {
    const page = e.page && e.page !== "index.html" ? ` (${e.page})` : "";
    const head = `image ${e.imageIndex + 1}${page}${e.viewportWidth ? ` at ${e.viewportWidth} px` : ""}`;
    if (e.reason) return `${head}: not scored (${e.reason})`;
    return `${head}: ${METRICS.map(([key, label]) => `${label} ${pct(e[key])}`).join(", ")}`;
  });
  return {
    text: total === null ? "fidelity –" : `fidelity ${pct(total)}`,
    title: `Closeness to the screenshot (1 = the same)\n${lines.join("\n")}`,
    lines,
    available: total !== null,
  };
}

const ISSUES = new Set(["missing", "text", "position", "color"]);
const MAX_REGIONS = 8;

/** The frame's regions, each a box in the screenshot's pixels; anything else dropped. */
function regionsOf(value) {
  if (!Array.isArray(value)) return [];
  const int = (v) => (Number.isFinite(v) && v >= 0 ? Math.round(v) : null);
  const out = [];
  for (const r of value.slice(0, MAX_REGIONS)) {
    const box = [int(r?.x), int(r?.y), int(r?.width), int(r?.height)];
    if (box.includes(null) || !box[2] || !box[3]) continue;
    const [x, y, width, height] = box;
    const text = (v) => (typeof v === "string" ? v.slice(0, 200) : "");
    const issue = ISSUES.has(r.issue) ? r.issue : "text";
    out.push({ x, y, width, height, expectedText: text(r.expectedText), actualText: text(r.actualText), issue });
  }
  return out;
}

/** The words a region's box says: what the screenshot has there and what the page has. */
export function regionTitle(region) {
  const has = region.actualText ? `the page has “${region.actualText}”` : "the page has nothing there";
  return `${region.issue}: the screenshot has “${region.expectedText}”, ${has}`;
}

/**
 * The score whose regions the preview of `page` shows at `viewportWidth`: the one of that
 * page (an untagged screenshot is the entry page's) tagged with the width nearest to it;
 * null when no score of that page has regions.
 */
export function overlayEntry(list, page, viewportWidth) {
  const own = (list ?? []).filter((e) => (e.page || "index.html") === page && e.regions?.length);
  if (!own.length) return null;
  const distance = (e) => Math.abs((e.viewportWidth || viewportWidth) - viewportWidth);
  return own.reduce((best, e) => (distance(e) < distance(best) ? e : best));
}

/** The variant's refinement rounds with one `refineRound` frame's data applied. */
export function addRound(list, data) {
  const round = Number.isInteger(data?.round) && data.round >= 0 ? data.round : null;
  if (round === null) return list ?? [];
  const entry = { round, score: score(data?.score), rolledBack: data?.rolledBack === true };
  return [...(list ?? []).filter((r) => r.round !== round), entry].sort((a, b) => a.round - b.round);
}

/** The score history, round by round (`67% → 82% → 60% (rolled back)`); null before any. */
export function formatRounds(list) {
  if (!list?.length) return null;
  return list.map((r) => `${pct(r.score)}${r.rolledBack ? " (rolled back)" : ""}`).join(" → ");
}
