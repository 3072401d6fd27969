// Unit tests of a site of several pages in the UI: tags in the create params, other files
// folded from `setFile` frames, an update carrying the project, links relayed from previews.
import assert from "node:assert/strict";
import { test } from "node:test";

import { relayedPage, withKeyRelay } from "../../services/gateway/static/js/framekeys.js";
import { createParams, updateParams } from "../../services/gateway/static/js/protocol.js";
import { applyFrame, newCommit } from "../../services/gateway/static/js/state.js";

const PNG = "data:image/png;base64,AA";

test("a create sends the screenshots' tags only in image mode, aligned with the images", () => {
  const imageMeta = [{ page: "index" }, { viewportWidth: 390, page: "pricing" }];
  const params = createParams({ inputMode: "image", text: "", images: [PNG, PNG], stack: "html_css", settings: {}, imageMeta });
  assert.deepEqual(params.prompt.imageMeta, imageMeta);
  const untagged = createParams({ inputMode: "image", text: "", images: [PNG], stack: "html_css", settings: {} });
  assert.equal("imageMeta" in untagged.prompt, false);
  const text = createParams({ inputMode: "text", text: "A page", images: [], stack: "html_css", settings: {}, imageMeta });
  assert.equal("imageMeta" in text.prompt, false);
});

test("setFile frames keep a variant's other files by path; setCode stays the entry page", () => {
  const commit = newCommit({ kind: "create", label: "Site", seedHistory: [], count: 1 });
  applyFrame(commit, { type: "setCode", variantIndex: 0, value: "<html>home</html>" });
  const change = applyFrame(commit, { type: "setFile", variantIndex: 0, path: "pricing.html", value: "<html>p</html>" });
  assert.equal(change.code, true);
  applyFrame(commit, { type: "setFile", variantIndex: 0, path: "pricing.html", value: "<html>p2</html>" });
  const [variant] = commit.variants;
  assert.equal(variant.code, "<html>home</html>");
  assert.deepEqual(variant.files, { "pricing.html": "<html>p2</html>" });
});

test("an update of a site sends every file, the entry page first; a one-file page sends none", () => {
  const site = { index: 0, history: [], code: "<html>home</html>", files: { "pricing.html": "<html>p</html>" } };
  const args = { project: { inputMode: "image", stack: "html_css" }, commit: { variants: [site] }, parent: site, text: "Rename", settings: {} };
  const { params } = updateParams(args);
  assert.deepEqual(params.files, { "index.html": "<html>home</html>", "pricing.html": "<html>p</html>" });
  assert.deepEqual(Object.keys(params.files), ["index.html", "pricing.html"]);
  const page = { ...site, files: {} };
  assert.equal("files" in updateParams({ ...args, commit: { variants: [page] }, parent: page }).params, false);
});

test("the preview relays clicks on relative page links; the app takes them from its frame only", () => {
  const srcdoc = withKeyRelay("<!DOCTYPE html><a href='pricing.html'>P</a>");
  assert.match(srcdoc, /s2cPreviewPage:h/);
  const frame = { contentWindow: {} };
  assert.equal(relayedPage({ source: frame.contentWindow, data: { s2cPreviewPage: "./about.html" } }, frame), "about.html");
  assert.equal(relayedPage({ source: {}, data: { s2cPreviewPage: "about.html" } }, frame), null);
  assert.equal(relayedPage({ source: frame.contentWindow, data: { s2cPreviewPage: 3 } }, frame), null);
});

test("the relay's link rule takes project pages only, never another site or a script", () => {
  const rule = /\/\^(.*?)\$\//.exec(withKeyRelay(""))[0];
  const linkRule = new RegExp(rule.slice(1, -1));
  for (const href of ["pricing.html", "about.htm", "pages/faq.html"]) assert.ok(linkRule.test(href), href);
  for (const href of ["https://x.org/a.html", "//x.org/a.html", "javascript:a.html", "#top", "/abs.html", "a.html?x=1"]) {
    assert.equal(linkRule.test(href), false, href);
  }
});
