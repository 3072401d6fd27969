// Unit tests of the UI's side of the /generate-code protocol
// (services/gateway/static/js/protocol.js): URLs, params frames, the socket wrapper.
// Browser globals the module touches are stood in for on globalThis.
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import {
  APP_ERROR_CODE,
  GenerationSocket,
  NORMAL_CLOSE,
  STACKS,
  USER_CLOSE_CODE,
  createParams,
  gatewayToken,
  generateCodeUrl,
  updateParams,
  variantHistoryForUpdate,
} from "../../services/gateway/static/js/protocol.js";
import PROVIDERS from "./providers.json" with { type: "json" };

const SOURCES = PROVIDERS.providers;

const KEYS = ["openAiApiKey", "anthropicApiKey", "openRouterApiKey", "geminiApiKey", "replicateApiKey", "openAiBaseURL"];
const PNG = "data:image/png;base64,AA";

test("close codes and stacks match the gateway", () => {
  assert.deepEqual([NORMAL_CLOSE, APP_ERROR_CODE, USER_CLOSE_CODE], [1000, 4332, 4333]);
  assert.deepEqual(
    STACKS.map((s) => s.id),
    [
      "html_tailwind",
      "html_css",
      "react_tailwind",
      "bootstrap",
      "vue_tailwind",
      "ionic_tailwind",
      "react_vite",
    ],
  );
});

test("the socket URL follows the page's scheme and carries the token escaped", () => {
  assert.equal(
    generateCodeUrl("", { protocol: "http:", host: "127.0.0.1:7001" }),
    "ws://127.0.0.1:7001/generate-code",
  );
  assert.equal(
    generateCodeUrl("a b&c", { protocol: "https:", host: "s2c.example" }),
    "wss://s2c.example/generate-code?token=a%20b%26c",
  );
});

function browserAt(href, stored = {}) {
  const storage = new Map(Object.entries(stored));
  const replaced = [];
  globalThis.window = { location: { href } };
  globalThis.sessionStorage = {
    getItem: (k) => (storage.has(k) ? storage.get(k) : null),
    setItem: (k, v) => storage.set(k, String(v)),
  };
  globalThis.history = { state: null, replaceState: (_s, _t, url) => replaced.push(url) };
  return { storage, replaced };
}

test("a token in the address is kept for the tab and removed from the address bar", () => {
  const { storage, replaced } = browserAt("http://127.0.0.1:7001/?token=t0k&x=1#top");
  assert.equal(gatewayToken(), "t0k");
  assert.equal(storage.get("s2c.gatewayToken"), "t0k");
  assert.deepEqual(replaced, ["/?x=1#top"]);
  // The next load (no token in the URL) reads it back.
  browserAt("http://127.0.0.1:7001/", Object.fromEntries(storage));
  assert.equal(gatewayToken(), "t0k");
});

test("no token anywhere, or storage disabled, is an empty token", () => {
  browserAt("http://127.0.0.1:7001/");
  assert.equal(gatewayToken(), "");
  globalThis.sessionStorage = {
    getItem() {
      throw new Error("disabled");
    },
    setItem() {
      throw new Error("disabled");
    },
  };
  assert.equal(gatewayToken(), "");
  globalThis.window = { location: { href: "http://127.0.0.1:7001/?token=once" } };
  assert.equal(gatewayToken(), "once"); // still works for this page load
});

test("a create from an image sends the images; keys are null unless entered", () => {
  const settings = { imageGeneration: 1, assetExtraction: true, openAiApiKey: "  sk-1  ", geminiApiKey: "   " };
  const params = createParams({ inputMode: "image", text: "", images: [PNG], stack: "bootstrap", settings, sources: SOURCES });
  assert.deepEqual(params, {
    generationType: "create",
    inputMode: "image",
    prompt: { text: "", images: [PNG], videos: [] },
    generatedCodeConfig: "bootstrap",
    isImageGenerationEnabled: true,
    isAssetExtractionEnabled: true,
    designSystem: null, // always sent, as upstream's UI does
    openAiApiKey: "sk-1",
    anthropicApiKey: null,
    geminiApiKey: null,
    replicateApiKey: null,
    openRouterApiKey: null,
    openAiBaseURL: null,
  });
});

test("a create from text sends no images and never extracts assets", () => {
  const params = createParams({
    inputMode: "text",
    text: "A bakery",
    images: [PNG],
    stack: "html_tailwind",
    settings: { assetExtraction: true },
    sources: SOURCES,
  });
  assert.deepEqual(params.prompt, { text: "A bakery", images: [], videos: [] });
  assert.equal(params.isAssetExtractionEnabled, false);
  assert.equal(params.isImageGenerationEnabled, false);
  assert.deepEqual(KEYS.map((k) => params[k]), KEYS.map(() => null));
});

test("a video create sends its one video and the picked design system; never extracts assets", () => {
  const video = "data:video/webm;base64,GkXf";
  const params = createParams({
    inputMode: "video",
    text: "Like the recording",
    images: [PNG],
    videos: [video, "data:video/mp4;base64,AA"],
    stack: "html_tailwind",
    settings: { assetExtraction: true },
    sources: SOURCES,
    designSystem: "Use #ff0066.",
  });
  assert.equal(params.inputMode, "video");
  assert.deepEqual(params.prompt, { text: "Like the recording", images: [], videos: [video] });
  assert.equal(params.isAssetExtractionEnabled, false);
  assert.equal(params.designSystem, "Use #ff0066.");
});

test("a video project's update keeps the video in its history and the design system", () => {
  const video = "data:video/webm;base64,GkXf";
  const parent = variant([{ role: "user", text: "", images: [], videos: [video] }], "<html>v</html>");
  const { params } = updateParams({
    project: { inputMode: "video", stack: "html_css" },
    commit: { variants: [parent] },
    parent,
    text: "Bigger title",
    settings: {},
    designSystem: "Rounded corners.",
  });
  assert.equal(params.inputMode, "video");
  assert.deepEqual(params.history[0], { role: "user", text: "", images: [], videos: [video] });
  assert.deepEqual(params.prompt.videos, []);
  assert.equal(params.designSystem, "Rounded corners.");
});

function variant(history, code) {
  return { history, code };
}

test("the update history ends with the variant's code when its history does not", () => {
  const user = { role: "user", text: "A page", images: [PNG] };
  assert.deepEqual(variantHistoryForUpdate(variant([user], "<html>")), [
    { role: "user", text: "A page", images: [PNG], videos: [] },
    { role: "assistant", text: "<html>", images: [], videos: [] },
  ]);
  const answered = [user, { role: "assistant", text: "<old>", images: [] }];
  assert.equal(variantHistoryForUpdate(variant(answered, "<new>")).length, 2);
  assert.deepEqual(variantHistoryForUpdate(variant([], "<html>")), []);
  assert.deepEqual(variantHistoryForUpdate(variant([user], "  ")).length, 1);
});

test("an update sends the parent's history, its code as fileState and every option", () => {
  const parent = variant([{ role: "user", text: "A page", images: [] }], "<html>v0</html>");
  const commit = { variants: [parent, variant([], "<html>v1</html>"), variant([], undefined)] };
  const { params, variantHistory } = updateParams({
    project: { inputMode: "image", stack: "react_tailwind" },
    commit,
    parent,
    text: "Make it blue",
    images: [PNG],
    settings: { assetExtraction: true, anthropicApiKey: "sk-ant" },
    sources: SOURCES,
  });
  const expected = [
    { role: "user", text: "A page", images: [], videos: [] },
    { role: "assistant", text: "<html>v0</html>", images: [], videos: [] },
    { role: "user", text: "Make it blue", images: [PNG], videos: [] },
  ];
  assert.deepEqual(variantHistory, expected);
  assert.deepEqual(params.history, expected);
  assert.deepEqual(params.fileState, { path: "index.html", content: "<html>v0</html>" });
  assert.deepEqual(params.optionCodes, ["<html>v0</html>", "<html>v1</html>", ""]);
  assert.deepEqual(
    [params.generationType, params.inputMode, params.generatedCodeConfig],
    ["update", "image", "react_tailwind"],
  );
  assert.deepEqual(params.prompt, { text: "Make it blue", images: [PNG], videos: [] });
  assert.equal(params.isAssetExtractionEnabled, true);
  assert.equal(params.anthropicApiKey, "sk-ant");
});

test("an update on a variant with only code sends an empty history and the code", () => {
  const parent = variant([], "<html>only code</html>");
  const { params, variantHistory } = updateParams({
    project: { inputMode: "text", stack: "html_css" },
    commit: { variants: [parent] },
    parent,
    text: "Add a footer",
    settings: {},
  });
  assert.deepEqual(params.history, []);
  assert.equal(params.fileState.content, "<html>only code</html>");
  assert.equal(params.isAssetExtractionEnabled, false);
  assert.deepEqual(variantHistory, [{ role: "user", text: "Add a footer", images: [], videos: [] }]);
});

test("an update on a variant with neither code nor history sends no fileState", () => {
  const parent = variant([], "");
  const { params } = updateParams({
    project: { inputMode: "text", stack: "html_css" },
    commit: { variants: [parent] },
    parent,
    text: "Try again",
    settings: {},
  });
  assert.equal("fileState" in params, false);
  assert.deepEqual(params.history, [{ role: "user", text: "Try again", images: [], videos: [] }]);
});

// A stand-in for the browser's WebSocket: records what the client does and lets the
// test play the server's part.
class FakeWebSocket {
  static last = null;

  constructor(url) {
    this.url = url;
    this.sent = [];
    this.closed = [];
    this.listeners = {};
    FakeWebSocket.last = this;
  }

  addEventListener(type, listener) {
    (this.listeners[type] ??= []).push(listener);
  }

  emit(type, event = {}) {
    for (const listener of this.listeners[type] ?? []) listener(event);
  }

  send(data) {
    this.sent.push(data);
  }

  close(code) {
    this.closed.push(code);
  }
}

beforeEach(() => {
  globalThis.WebSocket = FakeWebSocket;
});

function recordedSocket(params = { generationType: "create" }) {
  const seen = { opened: 0, frames: [], closes: [] };
  const socket = new GenerationSocket("ws://127.0.0.1:1/generate-code", params, {
    onOpen: () => seen.opened++,
    onFrame: (frame) => seen.frames.push(frame),
    onClose: (close) => seen.closes.push(close),
  });
  socket.start();
  return { socket, ws: FakeWebSocket.last, seen };
}

test("the socket sends exactly one params frame on open and passes typed frames on", () => {
  const { ws, seen } = recordedSocket({ generationType: "create", inputMode: "text" });
  assert.equal(ws.url, "ws://127.0.0.1:1/generate-code");
  ws.emit("open");
  assert.deepEqual(ws.sent.map((s) => JSON.parse(s)), [{ generationType: "create", inputMode: "text", resumable: true, codeStream: "append", scoreFidelity: true }]);
  assert.equal(seen.opened, 1);
  ws.emit("message", { data: JSON.stringify({ type: "variantCount", value: "2" }) });
  // Not JSON, not an object with a type, or binary: dropped, never thrown.
  for (const data of ["{not json", "null", "[1]", JSON.stringify({ value: 1 }), new ArrayBuffer(2)]) {
    ws.emit("message", { data });
  }
  ws.emit("message", { data: JSON.stringify({ type: "error", value: "Invalid input mode: x" }) });
  assert.deepEqual(
    seen.frames.map((f) => f.type),
    ["variantCount", "error"],
  );
  ws.emit("close", { code: APP_ERROR_CODE, reason: "" });
  ws.emit("close", { code: APP_ERROR_CODE, reason: "" });
  assert.deepEqual(seen.closes, [{ code: 4332, reason: "" }]);
});

test("cancel closes with 4333 once and silences every later callback", () => {
  const { socket, ws, seen } = recordedSocket();
  ws.emit("open");
  socket.cancel();
  socket.cancel();
  assert.deepEqual(ws.closed, [USER_CLOSE_CODE]);
  ws.emit("message", { data: JSON.stringify({ type: "setCode", value: "<p>" }) });
  ws.emit("close", { code: USER_CLOSE_CODE, reason: "" });
  assert.deepEqual([seen.frames, seen.closes], [[], []]);
});

test("a socket cancelled before it opens never sends the params", () => {
  const { socket, ws, seen } = recordedSocket();
  socket.cancel();
  ws.emit("open");
  assert.deepEqual([ws.sent, seen.opened], [[], 0]);
});

test("detach closes with 1000, never cancelling, and silences every later callback", () => {
  const { socket, ws, seen } = recordedSocket();
  ws.emit("open");
  socket.detach();
  socket.detach();
  socket.cancel(); // too late: the socket is already left
  assert.deepEqual(ws.closed, [1000]);
  ws.emit("message", { data: JSON.stringify({ type: "fidelity", data: {} }) });
  ws.emit("close", { code: 1000, reason: "" });
  assert.deepEqual(seen.frames, []);
  assert.deepEqual(seen.closes, []);
});
