// Unit tests of a site of several pages in the UI: tags in the create params, other files
// folded from `setFile` frames, an update carrying the project, links relayed from previews.
import assert from "node:assert/strict";
import { test } from "node:test";

import { relayedPage, withKeyRelay } from "../../services/gateway/static/js/framekeys.js";
import { createParams, updateParams } from "../../services/gateway/static/js/protocol.js";
import { downloadable, inlineProject, siteFiles } from "../../services/gateway/static/js/site.js";
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

test("a preview puts the site's own stylesheets and scripts inline, relative to the page", () => {
  const files = {
    "index.html": "",
    "site.css": "h1 { content: '$&' }",
    "js/app.js": "document.title = '</script>'",
  };
  const page = '<link rel="stylesheet" href="site.css"><script defer src="js/app.js"></script><link rel="stylesheet" href="https://cdn.example/x.css">';
  const html = inlineProject(page, "index.html", files);
  assert.equal(
    html,
    "<style>h1 { content: '$&' }</style><script defer>document.title = '<\\/script>'</script><link rel=\"stylesheet\" href=\"https://cdn.example/x.css\">",
  );
  // A page in a folder resolves against it; a file the site lacks stays a link.
  assert.equal(inlineProject('<link rel="stylesheet" href="site.css">', "pages/faq.html", files), '<link rel="stylesheet" href="site.css">');
  assert.equal(inlineProject('<script src="app.js"></script>', "js/page.html", files), "<script>document.title = '<\\/script>'</script>");
});

test("a site downloads as the gateway's zip of its files; a page as its index.html", async () => {
  const calls = [];
  const fetchImpl = async (url, init) => {
    calls.push([url, init]);
    return new Response(new Blob(["PK"]), { status: 200 });
  };
  const site = { code: "<p>home</p>", files: { "pricing.html": "<p>p</p>" } };
  const zip = await downloadable(site, { token: "t0k", fetchImpl });
  assert.equal(zip.name, "site.zip");
  assert.equal(await zip.blob.text(), "PK");
  const [[url, init]] = calls;
  assert.equal(url, "/api/export");
  assert.equal(init.headers.Authorization, "Bearer t0k");
  assert.deepEqual(JSON.parse(init.body), { files: siteFiles(site) });
  assert.deepEqual(Object.keys(siteFiles(site)), ["index.html", "pricing.html"]);

  const page = await downloadable({ code: "<p>one</p>", files: {} }, { fetchImpl });
  assert.equal(page.name, "index.html");
  assert.equal(await page.blob.text(), "<p>one</p>");
  assert.equal(calls.length, 1);

  // Offline: always the gateway's zip, asked for with the option, a single page included.
  const offlineSite = await downloadable(site, { fetchImpl, offline: true });
  assert.equal(offlineSite.name, "site-offline.zip");
  assert.deepEqual(JSON.parse(calls[1][1].body), { files: siteFiles(site), offline: true });
  const offlinePage = await downloadable({ code: "<p>one</p>", files: {} }, { fetchImpl, offline: true });
  assert.equal(offlinePage.name, "page-offline.zip");
  assert.deepEqual(JSON.parse(calls[2][1].body), { code: "<p>one</p>", offline: true });

  const refused = async () => new Response(JSON.stringify({ detail: "files: bad" }), { status: 400 });
  assert.deepEqual(await downloadable(site, { fetchImpl: refused }), { error: "Could not download the site: files: bad" });
  assert.deepEqual(await downloadable({ code: "", files: {} }), { error: "No code to download yet." });
});
