// Unit tests of the input panel's rules (services/gateway/static/js/media.js): which files
// are screenshots or a video, the modes they make, the URL capture and the design systems,
// against a fake fetch that answers like the gateway.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  captureUrl,
  deleteDesignSystem,
  designSystemParam,
  inputModeOf,
  loadDesignSystems,
  mediaKind,
  MAX_VIDEO_BYTES,
  saveDesignSystem,
} from "../../services/gateway/static/js/media.js";

const PNG = "data:image/png;base64,AA";

test("images and videos are told apart; other files are refused with a reason", () => {
  assert.deepEqual(mediaKind({ name: "a.png", type: "image/png", size: 10 }), { kind: "image" });
  assert.deepEqual(mediaKind({ name: "a.webm", type: "video/webm", size: 10 }), { kind: "video" });
  assert.deepEqual(mediaKind({ name: "a.mov", type: "video/quicktime", size: 10 }), { kind: "video" });
  assert.match(mediaKind({ name: "a.gif", type: "image/gif", size: 10 }).error, /a\.gif is not a PNG, JPEG or WebP image, or an MP4/);
  assert.match(mediaKind({ name: "", type: "text/plain", size: 1 }).error, /^That file is not/);
  assert.match(mediaKind({ name: "big.mp4", type: "video/mp4", size: MAX_VIDEO_BYTES + 1 }).error, /big\.mp4 is larger than 20 MB/);
});

test("a video makes a video create, screenshots an image create, nothing a text create", () => {
  assert.equal(inputModeOf({ screenshots: [], video: { dataUrl: "data:video/mp4;base64,AA" } }), "video");
  assert.equal(inputModeOf({ screenshots: [{ dataUrl: PNG }], video: null }), "image");
  assert.equal(inputModeOf({ screenshots: [], video: null }), "text");
});

function fakeFetch(status, body, calls = []) {
  return async (url, init) => {
    calls.push({ url, init });
    return {
      ok: status >= 200 && status < 300,
      status,
      json: async () => {
        if (body instanceof Error) throw body;
        return body;
      },
    };
  };
}

test("a capture posts upstream's {url} and returns the image with the page's final address", async () => {
  const calls = [];
  const fetchImpl = fakeFetch(200, { url: PNG, finalUrl: "http://page.test/" }, calls);
  const shot = await captureUrl("  page.test  ", { token: "t0k", fetchImpl });
  assert.deepEqual(shot, { dataUrl: PNG, name: "http://page.test/" });
  assert.equal(calls[0].url, "/api/screenshot");
  assert.equal(calls[0].init.method, "POST");
  assert.deepEqual(JSON.parse(calls[0].init.body), { url: "page.test" });
  assert.equal(calls[0].init.headers.Authorization, "Bearer t0k");
});

test("a refused capture says the server's reason", async () => {
  const detail = "Refusing to capture http://10.0.0.8/: 10.0.0.8 is a non-public address.";
  const shot = await captureUrl("http://10.0.0.8/", { fetchImpl: fakeFetch(422, { detail }) });
  assert.equal(shot.error, `Could not capture http://10.0.0.8/: ${detail}`);
  const proxy = await captureUrl("x.test", { fetchImpl: fakeFetch(502, new SyntaxError("html")) });
  assert.equal(proxy.error, "Could not capture x.test: the server answered 502");
  const empty = await captureUrl("   ", { fetchImpl: fakeFetch(200, {}) });
  assert.equal(empty.error, "Enter the address of a web page to capture.");
  const notImage = await captureUrl("x.test", { fetchImpl: fakeFetch(200, { url: "javascript:1" }) });
  assert.equal(notImage.error, "Could not capture x.test: the server sent no image.");
  const down = await captureUrl("x.test", { fetchImpl: async () => Promise.reject(new TypeError("offline")) });
  assert.equal(down.error, "Could not capture x.test: the server could not be reached.");
});

test("design systems: the list keeps well-formed entries; the param is the content or null", async () => {
  const body = [
    { id: "a", name: "Brand", content: "Use #ff0066.", createdAt: "x", updatedAt: "y" },
    { id: 2, name: "broken", content: "" },
    { id: "b", name: "Blank", content: "   " },
  ];
  const systems = await loadDesignSystems("", fakeFetch(200, body));
  assert.deepEqual(systems, [
    { id: "a", name: "Brand", content: "Use #ff0066." },
    { id: "b", name: "Blank", content: "   " },
  ]);
  assert.equal(designSystemParam(systems, "a"), "Use #ff0066.");
  assert.equal(designSystemParam(systems, "b"), null); // blank means none, as upstream
  assert.equal(designSystemParam(systems, ""), null);
  assert.equal(designSystemParam(systems, "gone"), null);
  assert.deepEqual(await loadDesignSystems("", fakeFetch(401, { detail: "no" })), []);
  assert.deepEqual(await loadDesignSystems("", fakeFetch(200, { not: "a list" })), []);
});

test("a design system is created with POST, edited with PATCH, deleted with DELETE", async () => {
  const calls = [];
  const saved = { id: "a b", name: "Brand", content: "Use #ff0066.", createdAt: "x", updatedAt: "y" };
  const created = await saveDesignSystem({ name: "Brand", content: "Use #ff0066." }, { token: "t0k", fetchImpl: fakeFetch(200, saved, calls) });
  assert.deepEqual(created, { system: { id: "a b", name: "Brand", content: "Use #ff0066." } });
  const edited = await saveDesignSystem({ id: "a b", name: "Brand", content: "Use #00ff66." }, { fetchImpl: fakeFetch(200, saved, calls) });
  assert.equal(edited.system.id, "a b");
  assert.deepEqual(await deleteDesignSystem("a b", { token: "t0k", fetchImpl: fakeFetch(204, null, calls) }), {});
  assert.deepEqual(
    calls.map((c) => [c.init.method, c.url]),
    [
      ["POST", "/api/design-systems"],
      ["PATCH", "/api/design-systems/a%20b"],
      ["DELETE", "/api/design-systems/a%20b"],
    ],
  );
  assert.deepEqual(JSON.parse(calls[0].init.body), { name: "Brand", content: "Use #ff0066." });
  assert.equal(calls[0].init.headers.Authorization, "Bearer t0k");
  assert.equal(calls[1].init.headers.Authorization, undefined);
  assert.equal(calls[2].init.headers.Authorization, "Bearer t0k");
});

test("a refused design-system change says the server's reason", async () => {
  const blank = await saveDesignSystem({ name: " ", content: "" }, { fetchImpl: fakeFetch(400, { detail: "Design system name is required" }) });
  assert.equal(blank.error, "Could not save the design system: Design system name is required");
  const big = await saveDesignSystem({ name: "x", content: "y" }, { fetchImpl: fakeFetch(413, new SyntaxError("html")) });
  assert.equal(big.error, "Could not save the design system: the server answered 413");
  const odd = await saveDesignSystem({ name: "x", content: "y" }, { fetchImpl: fakeFetch(200, { id: 1 }) });
  assert.equal(odd.error, "Could not save the design system: the server sent no design system.");
  const gone = await deleteDesignSystem("nope", { fetchImpl: fakeFetch(404, { detail: "Design system not found" }) });
  assert.equal(gone.error, "Could not delete the design system: Design system not found");
  const down = await deleteDesignSystem("a", { fetchImpl: async () => Promise.reject(new TypeError("offline")) });
  assert.equal(down.error, "Could not delete the design system: the server could not be reached.");
});
