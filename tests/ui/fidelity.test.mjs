// Unit tests of the UI's fidelity model (services/gateway/static/js/fidelity.js and the
// `fidelity` frame in state.js): a badge per option with every metric in its tooltip, an
// unavailable score shown as such (never 0), and the best option marked.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  addFidelity,
  addRound,
  bestVariant,
  formatFidelity,
  formatRounds,
  overlayEntry,
  regionTitle,
} from "../../services/gateway/static/js/fidelity.js";
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

const HEADING = { x: 60, y: 120, width: 300, height: 28, expectedText: "Fresh bread", actualText: "", issue: "missing" };

test("a score keeps its regions, and drops what is no box", () => {
  const regions = [HEADING, { x: -1, y: 0, width: 5, height: 5 }, { x: 1, y: 1, width: 0, height: 4 }, { ...HEADING, issue: "odd", actualText: 7 }];
  const [entry] = addFidelity([], { ...SCORE, regions });
  assert.deepEqual(entry.regions, [HEADING, { ...HEADING, issue: "text", actualText: "" }]);
  assert.equal(regionTitle(HEADING), "missing: the screenshot has “Fresh bread”, the page has nothing there");
  assert.deepEqual(addFidelity([], SCORE)[0].regions, []);
});

test("the overlay shows the regions of the page on show at the nearest tagged width", () => {
  let list = addFidelity([], { ...SCORE, viewportWidth: 1280, regions: [HEADING] });
  list = addFidelity(list, { ...SCORE, imageIndex: 1, viewportWidth: 390, regions: [{ ...HEADING, x: 8 }] });
  list = addFidelity(list, { ...SCORE, imageIndex: 2, page: "pricing.html", regions: [HEADING] });
  assert.equal(overlayEntry(list, "index.html", 1280).imageIndex, 0);
  assert.equal(overlayEntry(list, "index.html", 390).imageIndex, 1);
  assert.equal(overlayEntry(list, "pricing.html", 1280).imageIndex, 2);
  assert.equal(overlayEntry(list, "about.html", 1280), null);
  assert.equal(overlayEntry(addFidelity([], SCORE), "index.html", 1280), null); // no regions
});

test("the rounds of a refined option read as a history, a rolled-back one marked", () => {
  const commit = newCommit({ kind: "create", label: "x", seedHistory: [], count: 1 });
  for (const data of [{ round: 0, score: 0.67 }, { round: 1, score: 0.82 }, { round: 2, score: 0.6, rolledBack: true }]) {
    const change = applyFrame(commit, { type: "refineRound", variantIndex: 0, data });
    assert.equal(change.header, true);
  }
  applyFrame(commit, { type: "refineRound", variantIndex: 0, data: { round: "x" } }); // no round: ignored
  assert.equal(formatRounds(commit.variants[0].rounds), "67% → 82% → 60% (rolled back)");
  assert.equal(formatRounds([]), null);
  assert.deepEqual(addRound([], { round: 0, score: null }), [{ round: 0, score: null, rolledBack: false }]);
});
