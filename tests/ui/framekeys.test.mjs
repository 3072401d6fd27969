// Unit tests of the preview's key relay (services/gateway/static/js/framekeys.js): where the
// listener goes in the page, and which messages the app takes as a relayed key.
import assert from "node:assert/strict";
import { test } from "node:test";

import { relayedKey, withKeyRelay } from "../../services/gateway/static/js/framekeys.js";

test("the relay goes after the doctype, so the page keeps its standards mode", () => {
  const page = "  <!DOCTYPE html>\n<html><body><h1>Hi</h1></body></html>";
  const srcdoc = withKeyRelay(page);
  assert.ok(srcdoc.startsWith("  <!DOCTYPE html><script>"));
  assert.ok(srcdoc.endsWith("</script>\n<html><body><h1>Hi</h1></body></html>"));
  assert.match(srcdoc, /postMessage\(\{s2cPreviewKey:e\.key\},"\*"\)/);
  // No doctype (a fragment, or the first characters of a streamed file): first.
  assert.ok(withKeyRelay("<p>a</p>").startsWith("<script>"));
  assert.ok(withKeyRelay("<!DOCTYPE htm").endsWith("</script><!DOCTYPE htm"));
  assert.ok(withKeyRelay("").startsWith("<script>"));
});

test("only the frame's own window relays, and only the keys the app listens for", () => {
  const frame = { contentWindow: {} };
  const other = {};
  assert.equal(relayedKey({ source: frame.contentWindow, data: { s2cPreviewKey: "Escape" } }, frame), "Escape");
  assert.equal(relayedKey({ source: other, data: { s2cPreviewKey: "Escape" } }, frame), null);
  assert.equal(relayedKey({ source: null, data: { s2cPreviewKey: "Escape" } }, { contentWindow: null }), null);
  assert.equal(relayedKey({ source: frame.contentWindow, data: { s2cPreviewKey: "Enter" } }, frame), null);
  assert.equal(relayedKey({ source: frame.contentWindow, data: "Escape" }, frame), null);
  assert.equal(relayedKey({ source: frame.contentWindow, data: null }, frame), null);
});
