// Unit tests of the UI's model (services/gateway/static/js/state.js): how server frames
// fold into a commit. Run by `make test-ui` (node --test); no browser, no server.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  applyFrame,
  endCommit,
  failureText,
  newCommit,
  newVariant,
  runSummary,
  settled,
} from "../../services/gateway/static/js/state.js";

const seed = [{ role: "user", text: "A page", images: ["data:image/png;base64,AA"] }];

function commit(count = 2) {
  return newCommit({ kind: "create", label: "A page", seedHistory: seed, count });
}

test("a new commit has one generating variant per count, each with its own history copy", () => {
  const c = commit(2);
  assert.equal(c.variants.length, 2);
  assert.deepEqual(
    c.variants.map((v) => [v.index, v.status, v.code]),
    [
      [0, "generating", ""],
      [1, "generating", ""],
    ],
  );
  c.variants[0].history[0].images.push("x");
  assert.deepEqual(seed[0].images, ["data:image/png;base64,AA"]);
  assert.deepEqual(c.variants[1].history[0].videos, []);
  assert.notEqual(newCommit({ kind: "create", label: "", seedHistory: [], count: 1 }).id, c.id);
});

test("variantCount resizes the commit and keeps a valid selection", () => {
  const c = commit(4);
  c.selected = 3;
  const change = applyFrame(c, { type: "variantCount", variantIndex: 0, value: "2" });
  assert.equal(change.layout, true);
  assert.equal(c.variants.length, 2);
  assert.equal(c.selected, 0);
  assert.equal(applyFrame(c, { type: "variantCount", value: "2" }).layout, false);
  for (const bad of ["0", "-1", "many", null]) {
    assert.equal(applyFrame(c, { type: "variantCount", value: bad }).layout, false);
    assert.equal(c.variants.length, 2);
  }
});

test("variantModels names each variant; extra models are ignored", () => {
  const c = commit(2);
  const change = applyFrame(c, { type: "variantModels", data: { models: ["demo", 7, "x"] } });
  assert.equal(change.allHeaders, true);
  assert.deepEqual(
    c.variants.map((v) => v.model),
    ["demo", "7"],
  );
  applyFrame(c, { type: "variantModels", data: { models: "not a list" } });
  assert.equal(c.variants[0].model, "demo");
});

test("an error frame is recorded on the commit, not on a variant", () => {
  const c = commit(1);
  const change = applyFrame(c, { type: "error", value: "Invalid input mode: audio" });
  assert.equal(change.error, "Invalid input mode: audio");
  assert.equal(change.variant, null);
  assert.equal(c.error, "Invalid input mode: audio");
  assert.equal(c.variants[0].status, "generating");
});

test("a status mentioning the demo model marks the commit as a demo", () => {
  const c = commit(2);
  const change = applyFrame(c, { type: "status", variantIndex: 1, value: "Running the demo model" });
  assert.deepEqual([change.variant, change.header], [1, true]);
  assert.equal(c.variants[1].message, "Running the demo model");
  assert.equal(c.demo, true);
});

test("prose deltas append to their message; a new message completes the previous one", () => {
  const c = commit(1);
  applyFrame(c, { type: "thinking", variantIndex: 0, eventId: "thinking-0-a", value: "Plan" }, 1);
  const more = applyFrame(c, { type: "thinking", variantIndex: 0, eventId: "thinking-0-a", value: "ning" }, 2);
  assert.equal(more.events.length, 1);
  const [thinking] = c.variants[0].events;
  assert.deepEqual([thinking.content, thinking.status], ["Planning", "running"]);
  const next = applyFrame(c, { type: "assistant", variantIndex: 0, eventId: "assistant-0-b", value: "Hi" }, 3);
  assert.deepEqual(
    next.events.map((e) => [e.id, e.status]),
    [
      ["thinking-0-a", "complete"],
      ["assistant-0-b", "running"],
    ],
  );
  assert.equal(thinking.endedAt, 3);
  // Upstream drops prose without an event id.
  assert.deepEqual(applyFrame(c, { type: "assistant", variantIndex: 0, value: "lost" }).events, []);
  assert.equal(c.variants[0].events.length, 2);
});

test("toolStart closes running prose, toolResult finishes the same event by id", () => {
  const c = commit(1);
  applyFrame(c, { type: "assistant", variantIndex: 0, eventId: "assistant-0-a", value: "Writing" }, 1);
  const start = applyFrame(
    c,
    { type: "toolStart", variantIndex: 0, eventId: "call_1", data: { name: "create_file", input: { path: "index.html" } } },
    2,
  );
  assert.deepEqual(
    start.events.map((e) => [e.id, e.status]),
    [
      ["assistant-0-a", "complete"],
      ["call_1", "running"],
    ],
  );
  const tool = c.variants[0].byId.get("call_1");
  assert.deepEqual([tool.toolName, tool.input], ["create_file", { path: "index.html" }]);
  applyFrame(c, { type: "toolResult", variantIndex: 0, eventId: "call_1", data: { name: "create_file", ok: false, output: { error: "bad path" } } }, 5);
  assert.deepEqual([tool.status, tool.ok, tool.output, tool.endedAt], ["error", false, { error: "bad path" }, 5]);
  assert.equal(c.variants[0].events.length, 2);
});

test("a toolResult without a start creates its event; a missing ok counts as success", () => {
  const c = commit(1);
  const change = applyFrame(c, { type: "toolResult", variantIndex: 0, eventId: "call_9", data: { name: "edit_file" } });
  assert.deepEqual(
    change.events.map((e) => [e.toolName, e.status, e.ok, e.output]),
    [["edit_file", "complete", true, null]],
  );
});

test("setCode replaces the code, the legacy chunk frame appends", () => {
  const c = commit(1);
  assert.equal(applyFrame(c, { type: "setCode", variantIndex: 0, value: "<html>" }).code, true);
  applyFrame(c, { type: "chunk", variantIndex: 0, value: "</html>" });
  assert.equal(c.variants[0].code, "<html></html>");
  applyFrame(c, { type: "setCode", variantIndex: 0, value: "<p>" });
  assert.equal(c.variants[0].code, "<p>");
});

test("variantComplete finishes the variant and records its code as the assistant turn", () => {
  const c = commit(1);
  applyFrame(c, { type: "thinking", variantIndex: 0, eventId: "thinking-0-a", value: "x" });
  applyFrame(c, { type: "setCode", variantIndex: 0, value: "<html></html>" });
  const change = applyFrame(c, { type: "variantComplete", variantIndex: 0 }, 9);
  const variant = c.variants[0];
  assert.deepEqual([variant.status, variant.endedAt, change.header], ["complete", 9, true]);
  assert.deepEqual(change.events.map((e) => e.status), ["complete"]);
  assert.deepEqual(variant.history.at(-1), { role: "assistant", text: "<html></html>", images: [], videos: [] });
});

test("variantError fails only its variant and errors its open events", () => {
  const c = commit(2);
  applyFrame(c, { type: "toolStart", variantIndex: 1, eventId: "call_1", data: { name: "create_file" } });
  applyFrame(c, { type: "variantError", variantIndex: 1, value: "Invalid Anthropic key" });
  assert.deepEqual(
    c.variants.map((v) => [v.status, v.error]),
    [
      ["generating", ""],
      ["error", "Invalid Anthropic key"],
    ],
  );
  assert.equal(c.variants[1].byId.get("call_1").status, "error");
  assert.equal(c.variants[1].history.length, 1); // no code: no assistant turn
});

test("frames for an unknown variant grow the commit; out-of-range indexes are ignored", () => {
  const c = commit(1);
  const change = applyFrame(c, { type: "setCode", variantIndex: 2, value: "x" });
  assert.deepEqual([change.layout, c.variants.length, c.variants[2].code], [true, 3, "x"]);
  for (const index of [-1, 64]) {
    const ignored = applyFrame(c, { type: "setCode", variantIndex: index, value: "y" });
    assert.equal(ignored.variant, null);
  }
  assert.equal(c.variants.length, 3);
  // No (integer) index: variant 0, as upstream.
  applyFrame(c, { type: "setCode", variantIndex: "1", value: "z" });
  assert.equal(c.variants[0].code, "z");
  assert.equal(applyFrame(c, { type: "mystery", variantIndex: 0 }).code, false);
});

test("endCommit settles only the variants still generating", () => {
  const done = commit(3);
  applyFrame(done, { type: "setCode", variantIndex: 0, value: "<html></html>" });
  applyFrame(done, { type: "variantComplete", variantIndex: 2 });
  assert.deepEqual(endCommit(done, "done", "", 4), [0, 1]);
  assert.deepEqual(
    done.variants.map((v) => [v.status, v.error]),
    [
      ["complete", ""],
      ["error", "The generation ended without code."],
      ["complete", ""],
    ],
  );

  const cancelled = commit(1);
  applyFrame(cancelled, { type: "toolStart", variantIndex: 0, eventId: "t", data: { name: "create_file" } });
  assert.deepEqual(endCommit(cancelled, "cancelled", "", 5), [0]);
  assert.deepEqual([cancelled.status, cancelled.variants[0].status], ["cancelled", "cancelled"]);
  assert.equal(cancelled.variants[0].byId.get("t").status, "cancelled");

  const failed = commit(1);
  endCommit(failed, "failed", "");
  assert.equal(failed.variants[0].error, "Generation failed. Please retry.");
  const explained = commit(1);
  endCommit(explained, "failed", "The connection dropped.");
  assert.equal(explained.variants[0].error, "The connection dropped.");
});

test("newVariant tolerates history messages without videos", () => {
  const v = newVariant(3, [{ role: "assistant", text: "<p>", images: [] }]);
  assert.deepEqual(v.history, [{ role: "assistant", text: "<p>", images: [], videos: [] }]);
  assert.equal(v.index, 3);
});

test("a run where every option failed points at their reasons, not at support", () => {
  const c = commit(2);
  const support = "Error generating code. Please contact support.";
  applyFrame(c, { type: "variantError", variantIndex: 0, value: "Invalid API key (OpenAI)" });
  // One option still running: the server's own words, whatever they are.
  c.error = "The agent is busy";
  assert.equal(failureText(c), "The agent is busy");
  applyFrame(c, { type: "variantError", variantIndex: 1, value: "Invalid API key (OpenAI)" });
  applyFrame(c, { type: "error", value: support });
  assert.equal(failureText(c), "Both options failed: Invalid API key (OpenAI)");
  c.variants[1].error = "Rate limited";
  assert.equal(failureText(c), "Both options failed; each option says why.");
  const four = commit(4);
  for (const v of four.variants) applyFrame(four, { type: "variantError", variantIndex: v.index, value: "x" });
  assert.equal(failureText(four), "All 4 options failed: x");
  const one = commit(1);
  applyFrame(one, { type: "variantError", variantIndex: 0, value: "" });
  assert.equal(failureText(one), "The option failed; each option says why.");
  assert.equal(failureText(commit(2)), "Generation failed. Please retry.");
});

test("the run bar says what runs, how it ended, or that it is reconnecting", () => {
  const c = commit(2);
  const t0 = c.startedAt;
  applyFrame(c, { type: "variantComplete", variantIndex: 0 });
  assert.deepEqual(runSummary(c, t0 + 3000), { state: "running", text: "Generating 2 options… 1/2 done · 3s" });
  assert.deepEqual(runSummary(c, t0 + 3000, { attempt: 2, of: 4 }), {
    state: "reconnecting",
    text: "Connection lost: reconnecting… (try 2 of 4) · 3s",
  });
  endCommit(c, "failed", "The connection to the server was lost.", t0 + 5000);
  assert.deepEqual(runSummary(c, t0 + 9000), {
    state: "failed",
    text: "Failed after 5s: The connection to the server was lost.",
  });
  const done = commit(2);
  endCommit(done, "cancelled", "", done.startedAt + 2000);
  assert.equal(runSummary(done, 0).text, "Cancelled after 2s");
});

test("once every option ended, the run bar says the scores are computing", () => {
  const c = commit(2);
  applyFrame(c, { type: "variantComplete", variantIndex: 0 });
  assert.equal(settled(c), false);
  applyFrame(c, { type: "variantError", variantIndex: 1, value: "x" });
  assert.equal(settled(c), true);
  assert.deepEqual(runSummary(c, c.startedAt + 4000), {
    state: "scoring",
    text: "Scoring against the screenshot… 1/2 options complete · 4s",
  });
  // A new run then leaves it done, never cancelled: its options keep their outcome.
  endCommit(c, "done");
  assert.equal(settled(c), false);
  assert.deepEqual(c.variants.map((v) => v.status), ["complete", "error"]);
  assert.match(runSummary(c, 0).text, /^Done in .*: 1\/2 options complete$/);
});
