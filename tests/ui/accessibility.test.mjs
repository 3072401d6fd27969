// Unit tests of the UI's accessibility model (services/gateway/static/js/accessibility.js
// and the `accessibility` frame in state.js): one check per page and width, the badge
// shows the lowest score and the worst impact, an unchecked page is no number.
import assert from "node:assert/strict";
import { test } from "node:test";

import { addAccessibility, checkLine, formatAccessibility, impactCounts } from "../../services/gateway/static/js/accessibility.js";
import { applyFrame, newCommit } from "../../services/gateway/static/js/state.js";

const VIOLATION = { ruleId: "image-alt", impact: "critical", help: "Images must have alternative text", helpUrl: "https://dequeuniversity.com/rules/axe/4.14/image-alt", nodeCount: 2, nodes: [{ selector: "main > img", html: "<img>" }] };
const CHECK = { page: "index.html", viewportWidth: 1000, score: 0.75, rulesPassed: 20, unavailableReason: "", violations: [VIOLATION] };

test("the badge shows the lowest score and the worst impact", () => {
  const list = addAccessibility(addAccessibility([], CHECK), { ...CHECK, viewportWidth: 390, score: 1, violations: [] });
  assert.equal(list.length, 2);
  const shown = formatAccessibility(list);
  assert.equal(shown.text, "a11y 75%");
  assert.equal(shown.worst, "critical");
  assert.equal(shown.label, "Accessibility 75%: 1 critical");
  assert.deepEqual(impactCounts(list), { critical: 1, serious: 0, moderate: 0, minor: 0 });
  assert.equal(checkLine(list[0]), "at 1000 px: 75%, 1 rule broken");
  assert.equal(checkLine(list[1]), "at 390 px: 100%, no violation");
});

test("a check of the same page and width replaces the earlier one", () => {
  const list = addAccessibility(addAccessibility([], CHECK), { ...CHECK, score: 1, violations: [] });
  assert.equal(list.length, 1);
  assert.equal(formatAccessibility(list).worst, "");
});

test("an unchecked page says why and is no number", () => {
  const list = addAccessibility([], { viewportWidth: 1000, score: null, unavailableReason: "no render: timed out" });
  const shown = formatAccessibility(list);
  assert.equal(shown.text, "a11y –");
  assert.equal(shown.available, false);
  assert.equal(checkLine(list[0]), "at 1000 px: not checked (no render: timed out)");
});

test("a link that is not https is dropped, an unknown impact counts as minor", () => {
  const [entry] = addAccessibility([], { ...CHECK, violations: [{ ...VIOLATION, helpUrl: "javascript:alert(1)", impact: "huge" }] });
  assert.equal(entry.violations[0].helpUrl, "");
  assert.equal(entry.violations[0].impact, "minor");
});

test("the frame lands on its variant", () => {
  const commit = newCommit({ kind: "create", label: "x", seedHistory: [], count: 2 });
  const change = applyFrame(commit, { type: "accessibility", variantIndex: 1, data: CHECK }, 0);
  assert.equal(change.header, true);
  assert.equal(commit.variants[1].accessibility.length, 1);
  assert.deepEqual(commit.variants[0].accessibility, []);
});
