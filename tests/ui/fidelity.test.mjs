// Unit tests of the UI's fidelity model (services/gateway/static/js/fidelity.js and the
// `fidelity` frame in state.js): a badge per option with every metric in its tooltip, an
// unavailable score shown as such (never 0), and the best option marked.
import assert from "node:assert/strict";
import { test } from "node:test";

import { addFidelity, bestVariant, formatFidelity } from "../../services/gateway/static/js/fidelity.js";
import { applyFrame, newCommit } from "../../services/gateway/static/js/state.js";

const SCORE = { imageIndex: 0, viewportWidth: 1280, blockMatch: 0.9, text: 0.8, position: 1, color: 0.9, visual: 0.7, unavailableReason: "" };

test("the badge shows the mean and the tooltip every metric", () => {
  const shown = formatFidelity(addFidelity([], SCORE));
  assert.equal(shown.text, "fidelity 86%");
  assert.match(shown.title, /image 1 at 1280 px: block-match 90%, text 80%, position 100%, color 90%, visual 70%/);
  assert.equal(shown.available, true);
});

test("an unavailable score says why and is no number", () => {
  const shown = formatFidelity(addFidelity([], { imageIndex: 0, unavailableReason: "no render: timed out", blockMatch: null }));
  assert.equal(shown.text, "fidelity –");
  assert.match(shown.title, /not scored \(no render: timed out\)/);
  assert.equal(shown.available, false);
});

test("a page of a site is named in the tooltip, the entry page is not", () => {
  const list = addFidelity(addFidelity([], { ...SCORE, page: "index.html" }), { ...SCORE, imageIndex: 1, viewportWidth: 390, page: "pricing.html" });
  const { title } = formatFidelity(list);
  assert.match(title, /image 1 at 1280 px: /);
  assert.match(title, /image 2 \(pricing\.html\) at 390 px: /);
});

test("a later score of the same image replaces the earlier one", () => {
  const list = addFidelity(addFidelity([], SCORE), { ...SCORE, text: 1 });
  assert.equal(list.length, 1);
  assert.equal(list[0].text, 1);
});

test("the best of two or more scored options is marked by the frames", () => {
  const commit = newCommit({ kind: "create", label: "x", seedHistory: [], count: 3 });
  applyFrame(commit, { type: "fidelity", variantIndex: 0, data: SCORE });
  assert.equal(commit.variants[0].best, false); // one score alone is no ranking
  applyFrame(commit, { type: "fidelity", variantIndex: 1, data: { ...SCORE, text: 1 } });
  const change = applyFrame(commit, { type: "fidelity", variantIndex: 2, data: { imageIndex: 0, unavailableReason: "no browser" } });
  assert.equal(change.allHeaders, true);
  assert.deepEqual(commit.variants.map((v) => v.best), [false, true, false]);
  assert.equal(bestVariant(commit.variants.map((v) => v.fidelity)), 1);
});
