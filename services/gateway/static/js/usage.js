// Tokens and cost per variant, from the gateway's `usage` frames (our own frame type; see
// docs/browser-protocol.md). Each frame covers one model turn, so a variant's usage is
// the sum of its frames. A model the agent has no price for (a local server, the demo
// model) comes with `priced: false` and a cost of 0: shown as "unpriced", never as a
// misleading "$0".

const FIELDS = ["inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "totalTokens", "costUsd"];

function count(value) {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** `total` (or null before the first turn) plus one `usage` frame's `data`. */
export function addUsage(total, data) {
  const sum = { turns: (total?.turns ?? 0) + 1 };
  for (const field of FIELDS) sum[field] = (total?.[field] ?? 0) + count(data?.[field]);
  // A variant keeps its model, so the latest turn speaks for all. A frame without the
  // flag (an older gateway) is priced when it cost something.
  sum.priced = typeof data?.priced === "boolean" ? data.priced : count(data?.costUsd) > 0;
  return sum;
}

const tokenFormat = new Intl.NumberFormat("en-US");

/** `$0.0123`-style text, or "unpriced"; amounts under a hundredth of a cent still say
 * they cost something. */
export function formatCost(usd, priced = usd > 0) {
  if (!priced) return "unpriced";
  if (usd > 0 && usd < 0.0001) return "<$0.0001";
  return `$${usd < 1 ? usd.toFixed(4) : usd.toFixed(2)}`;
}

/** The badge text and its tooltip for a variant's usage; null before any turn ended. */
export function formatUsage(usage) {
  if (!usage) return null;
  // Providers report a total; one that does not still has its parts counted.
  const tokens = usage.totalTokens || usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens + usage.outputTokens;
  const priced = usage.priced === true;
  const cost = formatCost(usage.costUsd, priced);
  const turns = `${usage.turns} model turn${usage.turns === 1 ? "" : "s"}`;
  const parts = [
    `input ${tokenFormat.format(usage.inputTokens)}`,
    `cached ${tokenFormat.format(usage.cacheReadTokens)}`,
    `cache write ${tokenFormat.format(usage.cacheWriteTokens)}`,
    `output ${tokenFormat.format(usage.outputTokens)}`,
  ];
  const price = priced ? `cost ${cost}` : "no price is known for this model";
  return {
    text: `${tokenFormat.format(tokens)} tokens · ${cost}`,
    title: `${turns}: ${parts.join(", ")} tokens; ${price}`,
    priced,
  };
}
