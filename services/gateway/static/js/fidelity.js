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
