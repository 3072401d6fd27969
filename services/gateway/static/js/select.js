// Select and edit (docs/fidelity.md, "Updates keep what was not asked for"): the user
// picks an element in an option's preview, and the next update is about it. The preview
// runs in a sandboxed frame of its own origin, so the picking happens in the frame: a
// script that goes in beside the reporter (preview_assets.js) outlines the element under
// the pointer and, on a click, posts the element's outerHTML to this window. The outlines
// are boxes of their own on <html>, never a style on the page's elements: the HTML sent
// is the page's, as upstream's select-and-edit sends it.

const MESSAGE_TAG = "s2c-preview";
export const MAX_SELECTED_HTML = 100_000;
// The element as `fullText` quotes it for the model, as upstream's UI cuts it.
export const MAX_QUOTED_HTML = 12_000;

/** The in-frame script: `seq` tells this render's messages from a stale frame's. */
export function selectScript(seq) {
  return `(() => {
  const TAG = ${JSON.stringify(MESSAGE_TAG)};
  let on = false, hovered = null, chosen = null;
  const box = (colour, dashed) => {
    const el = document.createElement("div");
    el.style.cssText = "position:fixed;pointer-events:none;z-index:2147483647;display:none;box-sizing:border-box;" +
      "border:2px " + (dashed ? "dashed " : "solid ") + colour + ";background:" + colour + "22";
    return el;
  };
  const hover = box("#2563eb", true), picked = box("#f59e0b", false);
  picked.dataset.s2cSelected = "true";
  const place = (el, target) => {
    if (!target || !target.isConnected) { el.style.display = "none"; return; }
    if (!el.isConnected) document.documentElement.append(el);
    const r = target.getBoundingClientRect();
    Object.assign(el.style, { display: "block", left: r.left + "px", top: r.top + "px", width: r.width + "px", height: r.height + "px" });
  };
  const pickable = (el) => el && el.nodeType === 1 && el !== document.body && el !== document.documentElement && el !== hover && el !== picked;
  addEventListener("mouseover", (e) => { if (on && pickable(e.target)) place(hover, hovered = e.target); }, true);
  addEventListener("click", (e) => {
    if (!on) return;
    e.preventDefault();
    e.stopPropagation();
    if (!pickable(e.target)) return;
    chosen = e.target;
    on = false;
    place(hover, null);
    place(picked, chosen);
    parent.postMessage({ tag: TAG, seq: ${seq}, kind: "selected", html: chosen.outerHTML }, "*");
  }, true);
  const follow = () => { place(picked, chosen); if (on) place(hover, hovered); };
  addEventListener("scroll", follow, true);
  addEventListener("resize", follow);
  addEventListener("message", (e) => {
    const data = e.data;
    if (e.source !== parent || !data || data.tag !== TAG || data.kind !== "select") return;
    on = data.on === true;
    if (data.clear) chosen = null;
    document.documentElement.style.cursor = on ? "crosshair" : "";
    follow();
  });
})();`;
}

/** A message for a frame's select script: picking on or off; `clear` forgets the pick. */
export function selectMessage(on, clear = false) {
  return { tag: MESSAGE_TAG, kind: "select", on, clear };
}

/** The element's HTML from a `selected` message, or null for anything else. */
export function selectedHtml(data) {
  if (data?.kind !== "selected" || typeof data.html !== "string" || !data.html.trim()) return null;
  return data.html.length <= MAX_SELECTED_HTML ? data.html : null;
}

/** The update's prompt: as upstream's UI builds it (docs/browser-protocol.md), the
 * instruction, then the element quoted in an html fence and a note that it is the rendered
 * DOM in `fullText` (for the model); the element whole beside it (for the change check). */
export function selectedPrompt(text, html) {
  if (!html) return {};
  const quoted = html.length > MAX_QUOTED_HTML ? `${html.slice(0, MAX_QUOTED_HTML)}\n<!-- cut -->` : html;
  const fullText =
    `${text}\n\nApply the change to this specific element, which the user selected in the preview:\n` +
    "```html\n" + quoted + "\n```\n" +
    "The snippet is the element as the browser rendered it (its DOM), which can differ from the source.";
  return { fullText, selectedElementHtml: html };
}

/** A short name of the element for the panel: `<h1 id="title">` and its text. */
export function describeElement(html) {
  const tag = /^<([a-z][\w-]*)([^>]*)>/i.exec(html ?? "");
  if (!tag) return "an element";
  const id = /\sid="([^"]*)"/.exec(tag[2]);
  const text = html.replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim();
  const name = `<${tag[1].toLowerCase()}${id ? ` id="${id[1]}"` : ""}>`;
  return text ? `${name} “${text.length > 40 ? `${text.slice(0, 39)}…` : text}”` : name;
}
