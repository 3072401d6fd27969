// Unit tests of the UI's settings model (services/gateway/static/js/settings.js): the
// credential sources from `/api/providers` become the settings fields and the key params
// of every frame, so a new source needs no change to the UI.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  credentialFields,
  credentialParams,
  hasAnyModelKey,
  loadCredentialSources,
} from "../../services/gateway/static/js/settings.js";
import PROVIDERS from "./providers.json" with { type: "json" };

const SOURCES = PROVIDERS.providers;


test("each source gets a key field, and a base URL field where the protocol has one", () => {
  const fields = credentialFields(SOURCES);
  assert.deepEqual(
    fields.map((f) => f.name),
    ["openAiApiKey", "anthropicApiKey", "openRouterApiKey", "geminiApiKey", "replicateApiKey", "openAiBaseURL"],
  );
  assert.deepEqual(fields[0], { name: "openAiApiKey", label: "OpenAI API key", hint: "", type: "password", placeholder: "" });
  assert.equal(fields[4].hint, "image generation & editing");
  assert.equal(fields[5].type, "url");
  assert.equal(fields[5].label, "OpenAI base URL");
});

test("a source added on the server is a field and a param with no UI change", () => {
  const added = { id: "mistral", displayName: "Mistral", keyParam: "mistralApiKey", baseUrlParam: "mistralBaseURL", models: true };
  const sources = [...SOURCES, added];
  const names = credentialFields(sources).map((f) => f.name);
  assert.ok(names.includes("mistralApiKey") && names.includes("mistralBaseURL"));
  const params = credentialParams({ mistralApiKey: " m-1 " }, sources);
  assert.equal(params.mistralApiKey, "m-1");
  assert.equal(params.mistralBaseURL, null);
  assert.equal(hasAnyModelKey({ mistralApiKey: "m-1" }, sources), true);
});

test("params carry every source's fields, trimmed, null unless entered", () => {
  const params = credentialParams({ anthropicApiKey: "  sk-ant ", geminiApiKey: "   ", stack: "x" }, SOURCES);
  assert.deepEqual(params, {
    openAiApiKey: null,
    anthropicApiKey: "sk-ant",
    geminiApiKey: null,
    replicateApiKey: null,
    openRouterApiKey: null,
    openAiBaseURL: null,
  });
  assert.deepEqual(credentialParams({ openAiApiKey: "sk" }, []), {});
});

test("only a model source's key counts as the user's model key", () => {
  assert.equal(hasAnyModelKey({ replicateApiKey: "r8" }, SOURCES), false);
  assert.equal(hasAnyModelKey({ geminiApiKey: " g " }, SOURCES), true);
  assert.equal(hasAnyModelKey({ geminiApiKey: "  " }, SOURCES), false);
});

function fakeFetch(answer, seen = []) {
  return async (url, init) => {
    seen.push({ url, init });
    if (answer instanceof Error) throw answer;
    return answer;
  };
}

test("the sources are read from /api/providers, with the gateway token", async () => {
  const seen = [];
  const ok = { ok: true, json: async () => ({ providers: [...SOURCES, { id: 3 }, null] }) };
  assert.deepEqual(await loadCredentialSources("t0k", fakeFetch(ok, seen)), SOURCES);
  assert.deepEqual(seen, [{ url: "/api/providers", init: { headers: { Authorization: "Bearer t0k" } } }]);
  await loadCredentialSources("", fakeFetch(ok, seen));
  assert.deepEqual(seen[1].init, { headers: {} });
});

test("a server that cannot say leaves no key fields, never a broken page", async () => {
  assert.deepEqual(await loadCredentialSources("", fakeFetch({ ok: false, json: async () => ({}) })), []);
  assert.deepEqual(await loadCredentialSources("", fakeFetch(new TypeError("network"))), []);
  const notJson = { ok: true, json: async () => { throw new SyntaxError("x"); } };
  assert.deepEqual(await loadCredentialSources("", fakeFetch(notJson)), []);
  assert.deepEqual(await loadCredentialSources("", fakeFetch({ ok: true, json: async () => ({ providers: {} }) })), []);
});
