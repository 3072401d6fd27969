// A live preview: the code rendered in a sandboxed iframe via `srcdoc`. Callers push code
// at most once per animation frame; on top of that, re-renders are spaced out while code
// streams in, so a fast stream never thrashes the frame. The latest code always renders.

import { withKeyRelay } from "./framekeys.js";

const VIEWPORTS = {
  desktop: { width: 1280, height: 800 },
  mobile: { width: 390, height: 844 },
};
const MIN_INTERVAL_MS = 250;

export class PreviewFrame {
  constructor({ testId, title }) {
    this.viewport = "desktop";
    this.shown = null;
    this.pending = null;
    this.lastRender = -Infinity;
    this.timer = 0;
    this.el = document.createElement("div");
    this.el.className = "preview-stage";
    this.frame = document.createElement("iframe");
    // Scripts run (Tailwind, React, Vue…), but the page gets an opaque origin: it
    // cannot reach this app, its storage or its cookies.
    this.frame.setAttribute("sandbox", "allow-scripts");
    this.frame.setAttribute("referrerpolicy", "no-referrer");
    this.frame.dataset.testid = testId;
    // One navigation at a time: a srcdoc set while the previous one is still loading can
    // leave Chromium showing an empty document. The next code renders once this loads.
    this.loading = false;
    this.frame.addEventListener("load", () => {
      this.loading = false;
      if (this.pending !== null) this._render();
    });
    this.frame.title = title;
    this.placeholder = document.createElement("div");
    this.placeholder.className = "preview-placeholder";
    this.placeholder.innerHTML = '<span class="spinner" aria-hidden="true"></span><span>Waiting for code…</span>';
    this.el.append(this.frame, this.placeholder);
    this.resizeObserver = new ResizeObserver(() => this._layout());
    this.resizeObserver.observe(this.el);
  }

  /** Shows `code` (the whole document); `final` skips the streaming interval. */
  show(code, { final = false } = {}) {
    if (code === this.shown && this.pending === null) return;
    this.pending = code;
    clearTimeout(this.timer);
    const wait = final ? 0 : this.lastRender + MIN_INTERVAL_MS - performance.now();
    if (wait <= 0) this._render();
    else this.timer = setTimeout(() => requestAnimationFrame(() => this._render()), wait);
  }

  _render() {
    if (this.loading) return;
    const code = this.pending;
    this.pending = null;
    if (code === null || code === this.shown) return;
    this.shown = code;
    this.lastRender = performance.now();
    this.loading = this.frame.isConnected;
    this.frame.srcdoc = withKeyRelay(code);
    this.placeholder.hidden = Boolean(code);
  }

  setWaitingText(text) {
    this.placeholder.lastElementChild.textContent = text;
    this.placeholder.classList.toggle("is-idle", !/…$/.test(text));
  }

  setViewport(name) {
    if (!VIEWPORTS[name]) return;
    this.viewport = name;
    this.el.dataset.viewport = name;
    this._layout();
  }

  _layout() {
    const { width: stageWidth, height: stageHeight } = this.el.getBoundingClientRect();
    if (!stageWidth || !stageHeight) return;
    const vp = VIEWPORTS[this.viewport];
    const style = this.frame.style;
    if (this.viewport === "desktop") {
      // A stage wider than the desktop viewport (the full-screen view) shows the page at
      // that width, at full size, instead of a 1280 px page beside an empty margin.
      const width = Math.max(vp.width, stageWidth);
      const scale = stageWidth / width;
      style.width = `${width}px`;
      style.height = `${stageHeight / scale}px`;
      style.left = "0px";
      style.top = "0px";
      style.transform = `scale(${scale})`;
    } else {
      const scale = Math.min(1, (stageHeight - 16) / vp.height, stageWidth / vp.width);
      style.width = `${vp.width}px`;
      style.height = `${vp.height}px`;
      style.left = `${(stageWidth - vp.width * scale) / 2}px`;
      style.top = "8px";
      style.transform = `scale(${scale})`;
    }
  }

  destroy() {
    clearTimeout(this.timer);
    this.resizeObserver.disconnect();
  }
}
