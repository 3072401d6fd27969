// A live preview: the code rendered in a sandboxed iframe, double-buffered so a fast
// stream never shows a blank page. New code loads into a hidden iframe; when it has
// loaded (or after a short grace period) the two swap. Updates that arrive meanwhile
// collapse into the latest one, so rendering runs at the page's own speed, and callers
// push code at most once per animation frame.

const VIEWPORTS = {
  desktop: { width: 1280, height: 800 },
  mobile: { width: 390, height: 844 },
};
const SWAP_GRACE_MS = 1500;

export class PreviewFrame {
  constructor({ testId, title }) {
    this.testId = testId;
    this.title = title;
    this.viewport = "desktop";
    this.shown = null;
    this.pending = null;
    this.loading = false;
    this.timer = 0;
    this.el = document.createElement("div");
    this.el.className = "preview-stage";
    this.front = this._iframe();
    this.back = this._iframe();
    this._setRoles();
    this.el.append(this.front, this.back);
    this.placeholder = document.createElement("div");
    this.placeholder.className = "preview-placeholder";
    this.placeholder.innerHTML = '<span class="spinner" aria-hidden="true"></span><span>Waiting for code…</span>';
    this.el.append(this.placeholder);
    this.resizeObserver = new ResizeObserver(() => this._layout());
    this.resizeObserver.observe(this.el);
  }

  _iframe() {
    const frame = document.createElement("iframe");
    // Scripts run (Tailwind, React, Vue…), but the page gets an opaque origin: it
    // cannot reach this app, its storage or its cookies.
    frame.setAttribute("sandbox", "allow-scripts");
    frame.setAttribute("referrerpolicy", "no-referrer");
    frame.srcdoc = "";
    frame.addEventListener("load", () => {
      if (frame === this.back && this.loading) this._swap();
    });
    return frame;
  }

  _setRoles() {
    this.front.dataset.testid = this.testId;
    this.front.title = this.title;
    this.front.removeAttribute("aria-hidden");
    this.front.removeAttribute("tabindex");
    this.front.classList.add("is-front");
    delete this.back.dataset.testid;
    this.back.title = "";
    this.back.setAttribute("aria-hidden", "true");
    this.back.setAttribute("tabindex", "-1");
    this.back.classList.remove("is-front");
  }

  /** Shows `code` (the whole document) as soon as the current render is done. */
  show(code) {
    if (code === this.shown && !this.loading) return;
    this.pending = code;
    if (!this.loading) this._loadNext();
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

  _loadNext() {
    if (this.pending === null) return;
    const code = this.pending;
    this.pending = null;
    if (code === this.shown) return;
    this.loading = true;
    this.loadingCode = code;
    this.back.srcdoc = code;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (this.loading) this._swap();
    }, SWAP_GRACE_MS);
  }

  _swap() {
    clearTimeout(this.timer);
    [this.front, this.back] = [this.back, this.front];
    this._setRoles();
    this.shown = this.loadingCode;
    this.loading = false;
    this.placeholder.hidden = Boolean(this.shown);
    requestAnimationFrame(() => this._loadNext());
  }

  _layout() {
    const { width: stageWidth, height: stageHeight } = this.el.getBoundingClientRect();
    if (!stageWidth || !stageHeight) return;
    const vp = VIEWPORTS[this.viewport];
    for (const frame of [this.front, this.back]) {
      if (this.viewport === "desktop") {
        const scale = Math.min(1, stageWidth / vp.width);
        frame.style.width = `${vp.width}px`;
        frame.style.height = `${stageHeight / scale}px`;
        frame.style.left = "0px";
        frame.style.transform = `scale(${scale})`;
      } else {
        const scale = Math.min(1, (stageHeight - 16) / vp.height, stageWidth / vp.width);
        frame.style.width = `${vp.width}px`;
        frame.style.height = `${vp.height}px`;
        frame.style.left = `${(stageWidth - vp.width * scale) / 2}px`;
        frame.style.top = "8px";
        frame.style.transform = `scale(${scale})`;
      }
      if (this.viewport === "desktop") frame.style.top = "0px";
    }
  }

  destroy() {
    clearTimeout(this.timer);
    this.resizeObserver.disconnect();
  }
}
