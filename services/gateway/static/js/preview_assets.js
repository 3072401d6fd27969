// What the live preview renders instead of the code as written, and what it tells the user
// about the page's external assets. Pure functions (tests/ui/preview_assets.test.mjs).
//
// - CDN URLs of the hosts the gateway mirrors (`GET /vendor/index.json`) point at its local
//   copies, so Tailwind, React, fonts… load with no network and without waiting on one
//   (docs/offline.md). Only the preview's copy changes: copy, download and export keep the
//   code as the model wrote it.
// - A small reporter script goes first into the page: it tells this window when the page
//   has painted (the preview swaps frames then, never waiting on `load`) and which external
//   assets failed or have not answered, which the card turns into a notice.

export const SLOW_ASSET_MS = 3000;
const PAINT_DELAY_MS = 30;
const MESSAGE_TAG = "s2c-preview";

/** The gateway's vendor info, or one that rewrites nothing when it is unavailable. */
export async function loadVendorInfo(fetchImpl = globalThis.fetch) {
  try {
    const response = await fetchImpl("/vendor/index.json");
    if (!response.ok) return { available: false, hosts: [] };
    const info = await response.json();
    return info && info.available ? info : { available: false, hosts: [] };
  } catch {
    return { available: false, hosts: [] };
  }
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** `code` with every URL on a mirrored CDN host pointing at `origin + info.base + host`. */
export function rewriteCdnUrls(code, info, origin) {
  if (!info.available || !info.hosts.length || !code) return code;
  const hosts = info.hosts.map(escapeRegExp).join("|");
  // `https://host`, `http://host` or `//host`, followed by the end of the host.
  const pattern = new RegExp(`(?:https?:)?//(${hosts})(?=[/?#"'\\s>)\\\\]|$)`, "gi");
  return code.replace(pattern, (_, host) => `${origin}${info.base}${host.toLowerCase()}`);
}

/** The reporter's source: `seq` tells this render's messages from a stale frame's. */
export function reporterScript(seq, slowMs = SLOW_ASSET_MS) {
  // Runs before anything else in the page; timers still fire while a parser-blocking
  // script on an unreachable host holds the rest of the document back.
  return `(() => {
  const post = (kind, data) => parent.postMessage({ ...data, tag: ${JSON.stringify(MESSAGE_TAG)}, seq: ${seq}, kind }, "*");
  const done = new WeakSet();
  const reported = new WeakSet();
  const urlOf = (el) => el.currentSrc || el.src || el.href || "";
  const external = (url) => /^(https?:)?\\/\\//i.test(url);
  // On the document: an element's load event never reaches the window. An asset reported
  // slow that loads after all is no failure: the notice must not outlive it.
  document.addEventListener("load", (e) => {
    done.add(e.target);
    if (reported.has(e.target)) post("loaded", { url: urlOf(e.target) });
  }, true);
  addEventListener("error", (e) => {
    const el = e.target;
    if (!el || el === window || !el.tagName) return;
    done.add(el);
    const url = urlOf(el);
    if (external(url)) post("failed", { url, element: el.tagName.toLowerCase() });
  }, true);
  if (document.fonts) document.fonts.addEventListener("loadingerror", (e) => {
    for (const face of e.fontfaces || []) post("failed", { url: "", element: "font", family: face.family });
  });
  // Not animation frames: Chromium throttles them in a frame that is not on top. A short
  // timer after DOMContentLoaded lets the runtimes that start there (Babel, React) render.
  const painted = () => setTimeout(() => post("painted", {}), ${PAINT_DELAY_MS});
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", painted);
  else painted();
  const checkSlow = () => {
    const waiting = document.querySelectorAll("script[src], link[rel~=stylesheet][href], img[src]");
    for (const el of waiting) {
      const url = urlOf(el);
      const loaded = el.tagName === "IMG" ? el.complete : done.has(el);
      if (loaded || reported.has(el) || !external(url)) continue;
      reported.add(el);
      post("failed", { url, element: el.tagName.toLowerCase(), slow: true });
    }
  };
  setTimeout(checkSlow, ${slowMs});
  // A streamed update whose head is unchanged: the new body replaces the old one in place,
  // so Tailwind styles only the new nodes instead of the page loading again (preview.js).
  // Taken as soon as this script runs; applied once the document has parsed (the latest
  // one wins), so the UI need not wait for this page to finish loading to send the next.
  let queued = null;
  const apply = (data) => {
    const next = new DOMParser().parseFromString(data.html, "text/html").body;
    const body = document.body;
    for (const { name } of [...body.attributes]) {
      if (!next.hasAttribute(name)) body.removeAttribute(name);
    }
    for (const { name, value } of next.attributes) {
      if (body.getAttribute(name) !== value) body.setAttribute(name, value);
    }
    // A stream mostly appends: nodes equal to the shown ones stay, so the page (and
    // Tailwind's observer) only sees the part that changed.
    const shown = [...body.childNodes];
    const incoming = [...next.childNodes];
    let same = 0;
    while (same < shown.length && same < incoming.length && shown[same].isEqualNode(incoming[same])) same++;
    for (const node of shown.slice(same)) node.remove();
    body.append(...incoming.slice(same).map((n) => document.adoptNode(n)));
    post("applied", { version: data.version });
    setTimeout(checkSlow, ${slowMs});
  };
  addEventListener("message", (e) => {
    const data = e.data;
    if (e.source !== parent || !data || data.tag !== ${JSON.stringify(MESSAGE_TAG)} || data.kind !== "body") return;
    if (document.readyState === "loading") queued = data;
    else apply(data);
  });
  document.addEventListener("DOMContentLoaded", () => queued && apply(queued));
})();`;
}

/** `code` with the reporter first in its head, after any doctype (or it would turn on quirks). */
export function injectReporter(code, script) {
  const tag = `<script>${script}</script>`;
  const head = /<head(?:\s[^>]*)?>/i.exec(code);
  if (head) return code.slice(0, head.index + head[0].length) + tag + code.slice(head.index + head[0].length);
  const html = /<html(?:\s[^>]*)?>/i.exec(code);
  if (html) return code.slice(0, html.index + html[0].length) + tag + code.slice(html.index + html[0].length);
  const doctype = /^\s*<!doctype[^>]*>/i.exec(code);
  const at = doctype ? doctype[0].length : 0;
  return code.slice(0, at) + tag + code.slice(at);
}

/** The part of a document before its `<body`, or null while the body has not started. */
export function headOf(code) {
  const at = code.search(/<body[\s>]/i);
  return at < 0 ? null : code.slice(0, at);
}

/** Whether `code` can replace a shown page with head `shownHead` in place: same head, and
 * no script in the body (scripts in a replaced body would not run). */
export function canApplyInPlace(code, shownHead) {
  const head = headOf(code);
  return head !== null && head === shownHead && !/<script[\s>]/i.test(code.slice(head.length));
}

/** A message for the shown frame's reporter: replace the body with `code`'s. */
export function bodyMessage(code, version) {
  return { tag: MESSAGE_TAG, kind: "body", html: code, version };
}

/** A reporter message from the frame whose window is `source` for render `seq`, or null. */
export function readMessage(event, source, seq) {
  const data = event.data;
  if (event.source !== source || !data || data.tag !== MESSAGE_TAG || data.seq !== seq) return null;
  return data;
}

/**
 * `failures` (a render's failed assets) after one reporter message: a failure is added
 * once; an asset reported slow that then loaded is taken out. Whether the list changed.
 */
export function applyAssetMessage(failures, data) {
  if (data.kind === "failed") {
    if (failures.some((f) => f.url === data.url && f.family === data.family)) return false;
    failures.push(data);
    return true;
  }
  if (data.kind === "loaded") {
    const at = failures.findIndex((f) => f.slow && f.url === data.url);
    if (at < 0) return false;
    failures.splice(at, 1);
    return true;
  }
  return false;
}

const KIND_WORDS = {
  script: ["a script", "scripts"],
  link: ["a stylesheet", "stylesheets"],
  img: ["an image", "images"],
  font: ["a font", "fonts"],
};

function hostOf(url, info, origin) {
  if (!url) return "";
  const local = info.available ? `${origin}${info.base}` : null;
  if (local && url.startsWith(local)) return url.slice(local.length).split(/[/?#]/)[0];
  try {
    return new URL(url, origin).hostname;
  } catch {
    return "";
  }
}

/** The notices for a page's failed assets: one line per host, saying the code is fine. */
export function describeFailures(failures, info, origin) {
  const byHost = new Map();
  for (const failure of failures) {
    let host = hostOf(failure.url, info, origin);
    if (!host && failure.element === "font") host = "fonts";
    if (!host) continue;
    if (/^fonts\.(googleapis|gstatic)\.com$/.test(host)) host = "Google Fonts";
    const entry = byHost.get(host) ?? new Map();
    const key = failure.url || failure.family || "";
    entry.set(key, failure.element);
    byHost.set(host, entry);
  }
  const notices = [];
  for (const [host, assets] of byHost) {
    if (host === "Google Fonts" || host === "fonts") {
      const who = host === "fonts" ? "A web font" : "Google Fonts";
      notices.push(`${who} unreachable: the preview uses fallback fonts; the code is fine.`);
      continue;
    }
    const counts = new Map();
    for (const tag of assets.values()) counts.set(tag, (counts.get(tag) ?? 0) + 1);
    const what = [...counts]
      .map(([tag, n]) => {
        const [one, many] = KIND_WORDS[tag] ?? ["a file", "files"];
        return n === 1 ? one : `${n} ${many}`;
      })
      .join(" and ");
    notices.push(`${host} unreachable: ${what} did not load in the preview; the code is fine.`);
  }
  return notices;
}
