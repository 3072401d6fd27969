// Unit tests of the model picker's rules (services/gateway/static/js/models.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { loadModels, modelsParam, pickableModels } from "../../services/gateway/static/js/models.js";
import PROVIDERS from "./providers.json" with { type: "json" };

const SOURCES = PROVIDERS.providers;
const model = (id, extra = {}) => ({
  id,
  provider: "x",
  apiName: id,
  available: true,
  vision: true,
  tools: true,
  video: false,
  endpoint: "",
  credential: "",
  ...extra,
});
const MODELS = [
  model("demo"),
  model("kimi-k3 (low thinking)", { available: false, credential: "openrouter" }),
  model("gemini-3.1-pro-preview (high thinking)", { video: true, credential: "gemini" }),
  model("ollama:gemma3:1b", { vision: false, tools: false, endpoint: "ollama" }),
];
const ids = (list) => list.map((m) => m.id);

test("a model that reads no images is never offered for screenshots", () => {
  assert.deepEqual(ids(pickableModels(MODELS, "image", {}, SOURCES)), ["gemini-3.1-pro-preview (high thinking)"]);
  assert.deepEqual(ids(pickableModels(MODELS, "text", {}, SOURCES)), [
    "gemini-3.1-pro-preview (high thinking)",
    "ollama:gemma3:1b",
  ]);
  assert.deepEqual(ids(pickableModels(MODELS, "video", {}, SOURCES)), ["gemini-3.1-pro-preview (high thinking)"]);
});

test("a model the server has no key for is offered once the user enters one", () => {
  const offered = pickableModels(MODELS, "image", { openRouterApiKey: "sk-or-1" }, SOURCES);
  assert.deepEqual(ids(offered), ["kimi-k3 (low thinking)", "gemini-3.1-pro-preview (high thinking)"]);
  assert.deepEqual(ids(pickableModels(MODELS, "image", { openRouterApiKey: "  " }, SOURCES)).length, 1);
});

test("automatic sends no models param, as the upstream UI does not", () => {
  assert.deepEqual(modelsParam(""), {});
  assert.deepEqual(modelsParam("ollama:gemma3:1b"), { models: ["ollama:gemma3:1b"] });
});

test("the list is read from /api/models, and is empty when the server cannot say", async () => {
  const answer = (status, body) => async () => ({ ok: status === 200, json: async () => body });
  assert.deepEqual(ids(await loadModels("", answer(200, { models: [...MODELS, { id: 1 }] }))), ids(MODELS));
  assert.deepEqual(await loadModels("", answer(503, { models: [] })), []);
  assert.deepEqual(await loadModels("", async () => { throw new Error("down"); }), []);
});
