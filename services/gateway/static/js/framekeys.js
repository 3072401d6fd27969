// Keys pressed and project links clicked inside a preview. The page runs in a sandboxed frame with an opaque origin,
// so its key events never reach the app, and Escape typed there could not leave the
// full-screen view. A one-line listener put in front of the page posts the few keys the
// app's shortcuts need to the app; it adds no element and never reads the page. Only the
// frame's own window is listened to, and the worst a page posting the same message can do
// is close the view it is shown in.
//
// A site of several pages links its pages by relative paths (`pricing.html`), which a
// page rendered from a string cannot follow: the same listener posts the path of a click
// on such a link to the app, which shows that page of the option instead.

const RELAYED = ["Escape"];
const MARK = "s2cPreviewKey";
const PAGE_MARK = "s2cPreviewPage";
const RELAY =
  `<script>addEventListener("keydown",function(e){if(${JSON.stringify(RELAYED)}.indexOf(e.key)>=0)` +
  `parent.postMessage({${MARK}:e.key},"*")},true);` +
  `addEventListener("click",function(e){var a=e.target.closest&&e.target.closest("a[href]");` +
  `if(!a)return;var h=a.getAttribute("href");` +
  `if(/^[A-Za-z0-9_-][A-Za-z0-9_./-]*\\.html?$/.test(h)){e.preventDefault();` +
  `parent.postMessage({${PAGE_MARK}:h},"*")}},true)</script>`;

/** The srcdoc for `code`: the relay after its doctype (before it, the page would render in
 * quirks mode), else first; the parser puts it in the head either way. */
export function withKeyRelay(code) {
  const doctype = /^\s*<!doctype[^>]*>/i.exec(code);
  const at = doctype ? doctype[0].length : 0;
  return code.slice(0, at) + RELAY + code.slice(at);
}

/** The key a `message` event relays from `frame`'s page, or null for any other message. */
export function relayedKey(event, frame) {
  if (event.source === null || event.source !== frame.contentWindow) return null;
  const key = event.data?.[MARK];
  return RELAYED.includes(key) ? key : null;
}

/** The project page a `message` event from `frame`'s page asks to open, or null. */
export function relayedPage(event, frame) {
  if (event.source === null || event.source !== frame.contentWindow) return null;
  const path = event.data?.[PAGE_MARK];
  return typeof path === "string" ? path.replace(/^\.\//, "") : null;
}
