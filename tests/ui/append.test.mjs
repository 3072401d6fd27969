// Unit tests of the UI's append-only code stream (`codeStream: "append"`,
// docs/browser-protocol.md): `appendCode` frames extend a variant's code buffer, a whole
// `setCode` replaces it (services/gateway/static/js/state.js; a re-attach's whole code
// first: resume.test.mjs). No browser, no server.
import assert from "node:assert/strict";
import { test } from "node:test";

import { applyFrame, newCommit } from "../../services/gateway/static/js/state.js";

function commit(count = 2) {
  return newCommit({ kind: "create", label: "A page", seedHistory: [], count });
}

test("appends extend each variant's own buffer and say the code changed", () => {
  const c = commit();
  const changes = [
    applyFrame(c, { type: "appendCode", variantIndex: 0, value: "<html>" }),
    applyFrame(c, { type: "appendCode", variantIndex: 1, value: "<!DOCTYPE html>" }),
    applyFrame(c, { type: "appendCode", variantIndex: 0, value: "<body>é 🚀" }),
  ];
  assert.deepEqual(
    changes.map((ch) => [ch.variant, ch.code]),
    [
      [0, true],
      [1, true],
      [0, true],
    ],
  );
  assert.deepEqual(
    c.variants.map((v) => v.code),
    ["<html><body>é 🚀", "<!DOCTYPE html>"],
  );
});

test("a setCode replaces the buffer (an edit, a new file) and appends go on from it", () => {
  const c = commit(1);
  applyFrame(c, { type: "appendCode", variantIndex: 0, value: "<p>old</p>" });
  applyFrame(c, { type: "setCode", variantIndex: 0, value: "<p>new" });
  applyFrame(c, { type: "appendCode", variantIndex: 0, value: "</p>" });
  assert.equal(c.variants[0].code, "<p>new</p>");
});

test("an empty or malformed append changes nothing", () => {
  const c = commit(1);
  applyFrame(c, { type: "appendCode", variantIndex: 0, value: "<p>" });
  for (const value of ["", null, undefined, 42, { text: "x" }]) {
    const change = applyFrame(c, { type: "appendCode", variantIndex: 0, value });
    assert.equal(change.code, false, `value ${JSON.stringify(value)}`);
  }
  assert.equal(c.variants[0].code, "<p>");
});

test("an offset cuts the code's tail there first (a tool kept less than was streamed)", () => {
  const c = commit(1);
  applyFrame(c, { type: "appendCode", variantIndex: 0, value: "<html>🚀</html>\n" });
  // The offset counts UTF-16 code units, as JavaScript strings do: the emoji is two.
  const change = applyFrame(c, { type: "appendCode", variantIndex: 0, offset: 15, value: "" });
  assert.equal(change.code, true);
  assert.equal(c.variants[0].code, "<html>🚀</html>");
  applyFrame(c, { type: "appendCode", variantIndex: 0, offset: 6, value: "ok</html>" });
  assert.equal(c.variants[0].code, "<html>ok</html>");
  for (const offset of [-1, 99, 1.5, "3", null]) {
    assert.equal(applyFrame(c, { type: "appendCode", variantIndex: 0, offset, value: "x" }).code, false);
  }
  assert.equal(c.variants[0].code, "<html>ok</html>");
});

test("the appended code is what the variant completes with, for follow-ups", () => {
  const c = commit(1);
  applyFrame(c, { type: "appendCode", variantIndex: 0, value: "<html>" });
  applyFrame(c, { type: "appendCode", variantIndex: 0, value: "</html>" });
  applyFrame(c, { type: "variantComplete", variantIndex: 0, value: "Variant generation complete" });
  assert.equal(c.variants[0].status, "complete");
  assert.deepEqual(c.variants[0].history.at(-1), {
    role: "assistant",
    text: "<html></html>",
    images: [],
    videos: [],
  });
});
