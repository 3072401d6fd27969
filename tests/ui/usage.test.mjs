// Unit tests of the UI's usage model (services/gateway/static/js/usage.js and the `usage`
// frame in state.js): a variant's tokens and cost are the sum of its turns, and a model
// with no price says so instead of showing $0.
import assert from "node:assert/strict";
import { test } from "node:test";

import { applyFrame, newCommit } from "../../services/gateway/static/js/state.js";
import { addUsage, formatCost, formatTotal, formatUsage } from "../../services/gateway/static/js/usage.js";

const TURN = { inputTokens: 1200, outputTokens: 300, cacheReadTokens: 100, cacheWriteTokens: 0, totalTokens: 1600, costUsd: 0.0075, priced: true };

test("turns add up field by field", () => {
  const total = addUsage(addUsage(null, TURN), { ...TURN, costUsd: 0.0025 });
  assert.deepEqual(total, {
    turns: 2,
    inputTokens: 2400,
    outputTokens: 600,
    cacheReadTokens: 200,
    cacheWriteTokens: 0,
    totalTokens: 3200,
    costUsd: 0.01,
    priced: true,
  });
});

test("malformed fields count as nothing, not NaN", () => {
  const total = addUsage(null, { inputTokens: "lots", outputTokens: -5, totalTokens: null });
  assert.equal(total.inputTokens, 0);
  assert.equal(total.outputTokens, 0);
  assert.equal(total.costUsd, 0);
  assert.equal(formatUsage(addUsage(null, undefined)).text, "0 tokens · unpriced");
});

test("a priced variant shows its tokens and dollars", () => {
  const shown = formatUsage(addUsage(null, TURN));
  assert.equal(shown.text, "1,600 tokens · $0.0075");
  assert.equal(shown.priced, true);
  assert.match(shown.title, /^1 model turn: input 1,200, cached 100, cache write 0, output 300 tokens; cost \$0\.0075$/);
});

test("a model without a price is unpriced, never $0", () => {
  const shown = formatUsage(addUsage(null, { ...TURN, costUsd: 0, priced: false }));
  assert.equal(shown.text, "1,600 tokens · unpriced");
  assert.equal(shown.priced, false);
  assert.match(shown.title, /no price is known for this model/);
  assert.match(shown.title, /cached 100/);
  assert.doesNotMatch(shown.text, /\$0/);
});

test("the flag decides, not the amount: a priced turn that cost nothing is $0", () => {
  const free = formatUsage(addUsage(null, { ...TURN, costUsd: 0, priced: true }));
  assert.equal(free.text, "1,600 tokens · $0.0000");
  assert.equal(free.priced, true);
  // A frame of an older gateway has no flag: a cost says it was priced, 0 that it was not.
  assert.equal(addUsage(null, { ...TURN, priced: undefined }).priced, true);
  assert.equal(addUsage(null, { ...TURN, costUsd: 0, priced: undefined }).priced, false);
});

test("costs read as dollars at every size", () => {
  assert.equal(formatCost(0), "unpriced");
  assert.equal(formatCost(0, false), "unpriced");
  assert.equal(formatCost(0.5, false), "unpriced");
  assert.equal(formatCost(0.00001), "<$0.0001");
  assert.equal(formatCost(0.01234), "$0.0123");
  assert.equal(formatCost(3.456), "$3.46");
});

test("no usage yet shows nothing; a provider without a total still has its parts counted", () => {
  assert.equal(formatUsage(null), null);
  const shown = formatUsage(addUsage(null, { inputTokens: 10, outputTokens: 5, costUsd: 0.001 }));
  assert.equal(shown.text, "15 tokens · $0.0010");
});

test("each usage frame adds to its own variant and redraws its header", () => {
  const commit = newCommit({ kind: "create", label: "x", seedHistory: [], count: 2 });
  applyFrame(commit, { type: "usage", variantIndex: 1, data: TURN });
  const change = applyFrame(commit, { type: "usage", variantIndex: 1, data: TURN });
  assert.equal(change.variant, 1);
  assert.equal(change.header, true);
  assert.equal(commit.variants[0].usage, null);
  assert.equal(commit.variants[1].usage.totalTokens, 3200);
  assert.equal(commit.variants[1].usage.turns, 2);
});

test("the run's total sums its options and says which had no price", () => {
  const priced = addUsage(null, TURN);
  const local = addUsage(null, { inputTokens: 500, outputTokens: 200, cacheReadTokens: 300, totalTokens: 1000, costUsd: 0, priced: false });
  assert.equal(formatTotal([null, null]), null);
  assert.deepEqual(formatTotal([priced, null, priced]), {
    text: "3,200 tokens · $0.0150",
    title: "Total of 2 options: input 2,400, cached 200, cache write 0, output 600 tokens; cost $0.0150",
  });
  assert.deepEqual(formatTotal([priced, local]), {
    text: "2,600 tokens · $0.0075 + unpriced",
    title:
      "Total of 2 options: input 1,700, cached 400, cache write 0, output 500 tokens; " +
      "cost $0.0075 for 1 option; no price is known for 1 option",
  });
  assert.equal(formatTotal([local, local]).text, "2,000 tokens · unpriced");
  assert.match(formatTotal([local]).title, /^Total of 1 option: .*; no price is known for their models$/);
});
