// Unit tests of select and edit's pure parts (services/gateway/static/js/select.js,
// changes.js' frame reading, and the update params in protocol.js): the element goes out
// as upstream's UI sends it, and a malformed `unrequestedChanges` frame is dropped.
import assert from "node:assert/strict";
import { test } from "node:test";

import { changeTitle, readChanges } from "../../services/gateway/static/js/changes.js";
import { updateParams } from "../../services/gateway/static/js/protocol.js";
import { MAX_QUOTED_HTML, MAX_SELECTED_HTML, describeElement, selectedHtml, selectedPrompt } from "../../services/gateway/static/js/select.js";

const H1 = '<h1 id="title" class="big">Fresh   bread</h1>';

test("the picked element rides in fullText and beside it, as upstream sends it", () => {
  assert.deepEqual(selectedPrompt("Bigger", H1), {
    fullText:
      "Bigger\n\nApply the change to this specific element, which the user selected in the preview:\n" +
      "```html\n" + H1 + "\n```\n" +
      "The snippet is the element as the browser rendered it (its DOM), which can differ from the source.",
    selectedElementHtml: H1,
  });
  // A long element is cut in the quote, as upstream's UI cuts it, but goes whole beside it.
  const long = `<p>${"x".repeat(MAX_QUOTED_HTML)}</p>`;
  const cut = selectedPrompt("Bigger", long);
  assert.equal(cut.selectedElementHtml, long);
  assert.ok(cut.fullText.includes(`${long.slice(0, MAX_QUOTED_HTML)}\n<!-- cut -->\n\`\`\``));
  assert.ok(!cut.fullText.includes(long));
  assert.deepEqual(selectedPrompt("Bigger", null), {});
  const parent = { code: "<h1>x</h1>", history: [], files: {} };
  const commit = { variants: [parent] };
  const project = { inputMode: "text", stack: "html_tailwind" };
  const settings = {};
  const { params } = updateParams({ project, commit, parent, text: "Bigger", settings, selected: H1 });
  assert.equal(params.prompt.selectedElementHtml, H1);
  assert.equal(params.prompt.text, "Bigger");
  const plain = updateParams({ project, commit, parent, text: "Bigger", settings }).params;
  assert.deepEqual(plain.prompt, { text: "Bigger", images: [], videos: [] });
});

test("only a selected message with some HTML under the bound is a pick", () => {
  assert.equal(selectedHtml({ kind: "selected", html: H1 }), H1);
  assert.equal(selectedHtml({ kind: "painted", html: H1 }), null);
  assert.equal(selectedHtml({ kind: "selected", html: "  " }), null);
  assert.equal(selectedHtml({ kind: "selected", html: 3 }), null);
  assert.equal(selectedHtml({ kind: "selected", html: `<p>${"x".repeat(MAX_SELECTED_HTML)}</p>` }), null);
  assert.equal(describeElement(H1), '<h1 id="title"> “Fresh bread”');
  assert.equal(describeElement("<img src=a>"), "<img>");
});

test("a changes frame is read box by box; a malformed one is dropped", () => {
  const data = {
    check: 1,
    summary: "1 region",
    widths: [{ viewportWidth: 1280, regions: [{ x: 4, y: 500, width: 300, height: 32, beforeText: "Visit", afterText: "" }, { x: -1, y: 0, width: 1, height: 1 }] }],
  };
  const read = readChanges(data);
  assert.equal(read.check, 1);
  assert.deepEqual(read.widths[0].regions, [{ x: 4, y: 500, width: 300, height: 32, beforeText: "Visit", afterText: "" }]);
  assert.equal(changeTitle(read.widths[0].regions[0]), "Changed beyond the selected element: was “Visit”, now no text");
  assert.equal(readChanges({ widths: [] }), null);
  assert.equal(readChanges(null), null);
});
