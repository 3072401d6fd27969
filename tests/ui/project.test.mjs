// Unit tests of a built project (react_vite) in the UI: its file tree, its build status
// from tool results, and its download as a Vite project. No browser, no server.
import assert from "node:assert/strict";
import { test } from "node:test";

import { BUILT_PAGE, buildStatus, fileTree, isBuilt, projectFiles } from "../../services/gateway/static/js/project.js";
import { downloadable } from "../../services/gateway/static/js/site.js";
import { applyFrame, newCommit } from "../../services/gateway/static/js/state.js";

function built() {
  const commit = newCommit({ kind: "create", label: "App", seedHistory: [], count: 1 });
  for (const [path, value] of [
    ["index.html", "<div id=root></div>"],
    ["src/main.tsx", "main"],
    ["src/components/Header.tsx", "header"],
    ["src/App.tsx", "app"],
  ]) {
    applyFrame(commit, { type: "setFile", variantIndex: 0, path, value });
  }
  applyFrame(commit, { type: "setCode", variantIndex: 0, value: "<html>built</html>" });
  return commit;
}

function result(commit, build) {
  const output = { path: "src/App.tsx", build };
  return applyFrame(commit, { type: "toolResult", variantIndex: 0, eventId: "t1", data: { name: "create_file", ok: true, output } });
}

test("the file tree lists each folder once before what it holds, files by name", () => {
  assert.deepEqual(
    fileTree(["src/main.tsx", "index.html", "src/components/Header.tsx", "dist/index.html", "src/App.tsx"]).map((r) => [r.name, r.depth, r.path]),
    [
      ["dist/", 0, null],
      ["index.html", 1, "dist/index.html"],
      ["src/", 0, null],
      ["components/", 1, null],
      ["Header.tsx", 2, "src/components/Header.tsx"],
      ["App.tsx", 1, "src/App.tsx"],
      ["main.tsx", 1, "src/main.tsx"],
      ["index.html", 0, "index.html"],
    ],
  );
});

test("a tool result's build report makes the option a built project with a status", () => {
  const commit = built();
  const [variant] = commit.variants;
  assert.equal(isBuilt(variant), false);
  assert.equal(buildStatus(variant), null);
  const change = result(commit, { ok: false, errors: ["src/App.tsx:3:10: Unexpected }"], note: "…" });
  assert.equal(change.code, true);
  assert.equal(isBuilt(variant), true);
  assert.deepEqual(buildStatus(variant), {
    text: "Build failed (1 error): the preview keeps the last good build.",
    ok: false,
    errors: ["src/App.tsx:3:10: Unexpected }"],
  });
  result(commit, { ok: true, page: "dist/index.html", bytes: 18 });
  assert.equal(buildStatus(variant).ok, true);
  // The code is the built page; the source index.html stays one of the files.
  assert.deepEqual(projectFiles(variant)[BUILT_PAGE], "<html>built</html>");
  assert.equal(projectFiles(variant)["index.html"], "<div id=root></div>");
});

test("a built project downloads as the gateway's Vite project", async () => {
  const commit = built();
  result(commit, { ok: true });
  const calls = [];
  const fetchImpl = async (url, init) => {
    calls.push([url, JSON.parse(init.body)]);
    return new Response(new Blob(["zip"]), { status: 200 });
  };
  const download = await downloadable(commit.variants[0], { fetchImpl, offline: true });
  assert.equal(download.name, "react-app.zip");
  const [[url, body]] = calls;
  assert.equal(url, "/api/export");
  assert.equal(body.stack, "react_vite");
  assert.equal("offline" in body, false);
  assert.equal(body.files[BUILT_PAGE], "<html>built</html>");
  assert.equal(body.files["src/App.tsx"], "app");
});
