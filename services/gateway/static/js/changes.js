// What an update changed beyond the element it was asked about, from the gateway's
// `unrequestedChanges` frames (ours; docs/browser-protocol.md, docs/fidelity.md): boxes of
// the new page, drawn over the option's preview while its latest check names any.

import { h } from "./dom.js";

const MAX_REGIONS = 8;

/** The latest check of a variant from one frame's data; null when it is malformed. */
export function readChanges(data) {
  if (!Number.isInteger(data?.check) || !Array.isArray(data?.widths)) return null;
  const int = (v) => (Number.isFinite(v) && v >= 0 ? Math.round(v) : null);
  const text = (v) => (typeof v === "string" ? v.slice(0, 200) : "");
  const widths = data.widths.map((w) => ({
    viewportWidth: int(w?.viewportWidth) || 1280,
    regions: (Array.isArray(w?.regions) ? w.regions : []).slice(0, MAX_REGIONS).flatMap((r) => {
      const box = [int(r?.x), int(r?.y), int(r?.width), int(r?.height)];
      if (box.includes(null) || !box[2] || !box[3]) return [];
      const [x, y, width, height] = box;
      return [{ x, y, width, height, beforeText: text(r.beforeText), afterText: text(r.afterText) }];
    }),
  }));
  return { check: data.check, summary: text(data.summary), widths };
}

/** What a box's tooltip says: what the page had there and what it has now. */
export function changeTitle(region) {
  const quoted = (t) => (t ? `“${t}”` : "no text");
  return `Changed beyond the selected element: was ${quoted(region.beforeText)}, now ${quoted(region.afterText)}`;
}

/** The boxes over an option's preview: those of the check at the width nearest the preview's. */
export class ChangesOverlay {
  constructor(i) {
    this.el = h("div", { class: "changes-overlay", testid: `variant-${i}-changes`, "aria-hidden": "true", hidden: true });
    this.key = "";
  }

  render(changes, { shown, width, stage }) {
    const own = (changes?.widths ?? []).filter((w) => w.regions.length);
    const entry = own.length ? own.reduce((a, b) => (Math.abs(b.viewportWidth - width) < Math.abs(a.viewportWidth - width) ? b : a)) : null;
    this.el.hidden = !(entry && shown);
    if (this.el.hidden) return;
    const scale = (stage || width) / entry.viewportWidth;
    const key = `${changes.check}:${entry.viewportWidth}:${entry.regions.length}:${scale}`;
    if (key === this.key) return;
    this.key = key;
    this.el.title = changes.summary;
    this.el.replaceChildren(
      ...entry.regions.map((r) => {
        const box = h("div", { class: "changes-region", title: changeTitle(r) });
        // Through the CSSOM: the page's CSP allows no inline style attributes.
        Object.assign(box.style, { left: `${r.x * scale}px`, top: `${r.y * scale}px`, width: `${r.width * scale}px`, height: `${r.height * scale}px` });
        return box;
      }),
    );
  }
}
