// Unit tests of the live preview's page rules (services/gateway/static/js/preview_assets.js):
// which URLs point at the gateway's local copies, where the reporter goes, when an update
// can be swapped in place, and what the card says about assets that failed.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  applyAssetMessage,
  canApplyInPlace,
  describeFailures,
  headOf,
  injectReporter,
  loadVendorInfo,
  rewriteCdnUrls,
} from "../../services/gateway/static/js/preview_assets.js";

const INFO = { available: true, base: "/vendor/abc/cdn/", hosts: ["cdn.tailwindcss.com", "fonts.googleapis.com", "unpkg.com"] };
const ORIGIN = "http://127.0.0.1:7001";

test("mirrored CDN hosts point at the gateway; other hosts and look-alikes do not", () => {
  const code = [
    '<script src="https://cdn.tailwindcss.com"></script>',
    '<script src="//unpkg.com/react@18/umd/react.development.js"></script>',
    "<link href='https://fonts.googleapis.com/css2?family=Inter&amp;display=swap'>",
    '<img src="https://cdn.tailwindcss.com.evil.example/x.png">',
    '<img src="https://placehold.co/10">',
  ].join("\n");
  const out = rewriteCdnUrls(code, INFO, ORIGIN).split("\n");
  assert.equal(out[0], '<script src="http://127.0.0.1:7001/vendor/abc/cdn/cdn.tailwindcss.com"></script>');
  assert.equal(out[1], '<script src="http://127.0.0.1:7001/vendor/abc/cdn/unpkg.com/react@18/umd/react.development.js"></script>');
  assert.equal(out[2], "<link href='http://127.0.0.1:7001/vendor/abc/cdn/fonts.googleapis.com/css2?family=Inter&amp;display=swap'>");
  assert.equal(out[3], '<img src="https://cdn.tailwindcss.com.evil.example/x.png">');
  assert.equal(out[4], '<img src="https://placehold.co/10">');
  assert.equal(rewriteCdnUrls(code, { available: false, hosts: [] }, ORIGIN), code);
});

test("without the gateway's copies the preview renders the code as written", async () => {
  const failing = async () => ({ ok: false });
  assert.deepEqual(await loadVendorInfo(failing), { available: false, hosts: [] });
  const throwing = async () => {
    throw new TypeError("offline");
  };
  assert.deepEqual(await loadVendorInfo(throwing), { available: false, hosts: [] });
  const ok = async () => ({ ok: true, json: async () => INFO });
  assert.deepEqual(await loadVendorInfo(ok), INFO);
});

test("the reporter goes first in the head, and never before a doctype", () => {
  assert.equal(injectReporter("<!DOCTYPE html><html><head><title>x</title>", "R"), "<!DOCTYPE html><html><head><script>R</script><title>x</title>");
  assert.equal(injectReporter('<html lang="en"><body>', "R"), '<html lang="en"><script>R</script><body>');
  assert.equal(injectReporter("<!doctype html><p>hi", "R"), "<!doctype html><script>R</script><p>hi");
  assert.equal(injectReporter("<p>hi", "R"), "<script>R</script><p>hi");
  assert.equal(injectReporter("<header>x</header>", "R"), "<script>R</script><header>x</header>");
});

test("an update is swapped in place only with the same head and no script in its body", () => {
  const head = '<html><head><script src="https://cdn.tailwindcss.com"></script></head>';
  assert.equal(headOf(`${head}<body class="a">`), head);
  assert.equal(headOf(head), null);
  assert.ok(canApplyInPlace(`${head}<body class="bg-red-500"><p>more`, head));
  assert.ok(!canApplyInPlace(`${head}<body><script>go()</script>`, head));
  assert.ok(!canApplyInPlace(`<html><head><title>new</title></head><body>`, head));
  assert.ok(!canApplyInPlace(head, head));
});

test("failures become one notice per host, saying the code is fine", () => {
  const notices = describeFailures(
    [
      { url: `${ORIGIN}/vendor/abc/cdn/fonts.googleapis.com/css2?family=Comic+Neue`, element: "link" },
      { url: "https://fonts.gstatic.com/s/comic.woff2", element: "font" },
      { url: "https://placehold.co/600x400", element: "img" },
      { url: "https://placehold.co/100", element: "img" },
      { url: "https://cdn.example.net/app.js", element: "script" },
      { url: "", element: "font", family: "Mystery" },
    ],
    INFO,
    ORIGIN,
  );
  assert.deepEqual(notices, [
    "Google Fonts unreachable: the preview uses fallback fonts; the code is fine.",
    "placehold.co unreachable: 2 images did not load in the preview; the code is fine.",
    "cdn.example.net unreachable: a script did not load in the preview; the code is fine.",
    "A web font unreachable: the preview uses fallback fonts; the code is fine.",
  ]);
  assert.deepEqual(describeFailures([], INFO, ORIGIN), []);
});

test("an asset reported slow that then loads leaves the notice; a failed one stays", () => {
  const fonts = "http://127.0.0.1:7001/vendor/abc/cdn/fonts.googleapis.com/css2?family=Inter";
  const image = "https://placehold.co/600x400";
  const failures = [];
  assert.equal(applyAssetMessage(failures, { kind: "failed", url: fonts, element: "link", slow: true }), true);
  assert.equal(applyAssetMessage(failures, { kind: "failed", url: image, element: "img" }), true);
  assert.equal(applyAssetMessage(failures, { kind: "failed", url: image, element: "img" }), false);
  assert.equal(describeFailures(failures, INFO, ORIGIN).length, 2);
  // The slow stylesheet loads after all: only the image is still said to be unreachable.
  assert.equal(applyAssetMessage(failures, { kind: "loaded", url: fonts }), true);
  assert.deepEqual(describeFailures(failures, INFO, ORIGIN), [
    "placehold.co unreachable: an image did not load in the preview; the code is fine.",
  ]);
  // A load of something never reported, or of a failure that was no slow one, changes nothing.
  assert.equal(applyAssetMessage(failures, { kind: "loaded", url: image }), false);
  assert.equal(applyAssetMessage(failures, { kind: "painted" }), false);
  assert.equal(failures.length, 1);
});
