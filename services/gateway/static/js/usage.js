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

function tokensOf(usage) {
  // Providers report a total; one that does not still has its parts counted.
  return usage.totalTokens || usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens + usage.outputTokens;
}

function tokenParts(usage) {
  return [
    `input ${tokenFormat.format(usage.inputTokens)}`,
    `cached ${tokenFormat.format(usage.cacheReadTokens)}`,
    `cache write ${tokenFormat.format(usage.cacheWriteTokens)}`,
    `output ${tokenFormat.format(usage.outputTokens)}`,
  ].join(", ");
}

/** The badge text and its tooltip for a variant's usage; null before any turn ended. */
export function formatUsage(usage) {
  if (!usage) return null;
  const priced = usage.priced === true;
  const cost = formatCost(usage.costUsd, priced);
  const turns = `${usage.turns} model turn${usage.turns === 1 ? "" : "s"}`;
  const price = priced ? `cost ${cost}` : "no price is known for this model";
  return {
    text: `${tokenFormat.format(tokensOf(usage))} tokens · ${cost}`,
    title: `${turns}: ${tokenParts(usage)} tokens; ${price}`,
    priced,
  };
}

/**
 * The run bar's total over a generation's options (their `usage`, null for an option
 * without a finished turn): tokens and cost summed; the cost of the priced options only,
 * saying so when some option's model has no price. Null before any option has usage.
 */
export function formatTotal(usages) {
  const counted = usages.filter(Boolean);
  if (!counted.length) return null;
  const sum = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
  let tokens = 0;
  for (const usage of counted) {
    for (const field of Object.keys(sum)) sum[field] += usage[field];
    tokens += tokensOf(usage);
  }
  const unpriced = counted.filter((u) => u.priced !== true).length;
  const priced = counted.length - unpriced;
  const options = (n) => `${n} option${n === 1 ? "" : "s"}`;
  let cost;
  let price;
  if (!priced) {
    cost = "unpriced";
    price = "no price is known for their models";
  } else {
    cost = formatCost(sum.costUsd, true) + (unpriced ? " + unpriced" : "");
    price = `cost ${formatCost(sum.costUsd, true)}` + (unpriced ? ` for ${options(priced)}; no price is known for ${options(unpriced)}` : "");
  }
  return {
    text: `${tokenFormat.format(tokens)} tokens · ${cost}`,
    title: `Total of ${options(counted.length)}: ${tokenParts(sum)} tokens; ${price}`,
  };
}
