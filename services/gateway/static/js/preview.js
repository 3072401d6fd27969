// A live preview: the code rendered in a sandboxed iframe via `srcdoc`. Callers push code
// at most once per animation frame; on top of that, re-renders are spaced out while code
// streams in, so a fast stream never thrashes the frame. The latest code always renders.
//
// Two frames take turns: the next code renders in a hidden frame, which replaces the shown
// one as soon as it has painted (its reporter says so, preview_assets.js), or after
// SWAP_DEADLINE_MS when a parser-blocking asset holds it back. Nothing waits on `load`, so
// an image or font on an unreachable host never freezes the preview; the card's notice
// names what failed instead.

import {
  describeFailures,
  injectReporter,
  loadVendorInfo,
  readMessage,
  reporterScript,
  rewriteCdnUrls,
} from "./preview_assets.js";
import { withKeyRelay } from "./framekeys.js";

const VIEWPORTS = {
  desktop: { width: 1280, height: 800 },
  mobile: { width: 390, height: 844 },
};
const MIN_INTERVAL_MS = 200;
const SWAP_DEADLINE_MS = 1000;

let vendorInfo = null;
/** The gateway's vendor info, fetched once per page and shared by every preview. */
function vendor() {
  vendorInfo ??= loadVendorInfo();
  return vendorInfo;
}

let renders = 0;

export class PreviewFrame {
  constructor({ testId, title }) {
    this.viewport = "desktop";
    this.testId = testId;
    this.title = title;
    this.shown = null;
    this.pending = null;
    this.lastRender = -Infinity;
    this.timer = 0;
    this.inflight = null; // { frame, seq, code, failures, deadline }
    this.el = document.createElement("div");
    this.el.className = "preview-stage";
    this.frame = this._makeFrame();
    this.frame.dataset.testid = testId;
    this.failures = [];
    this.info = null;
    this.placeholder = document.createElement("div");
    this.placeholder.className = "preview-placeholder";
    this.placeholder.innerHTML = '<span class="spinner" aria-hidden="true"></span><span>Waiting for code…</span>';
    this.notice = document.createElement("p");
    this.notice.className = "preview-notice";
    this.notice.dataset.testid = `${testId}-notice`;
    this.notice.setAttribute("role", "status");
    this.notice.hidden = true;
    this.el.append(this.frame, this.placeholder, this.notice);
    this.onMessage = (event) => this._message(event);
    window.addEventListener("message", this.onMessage);
    this.resizeObserver = new ResizeObserver(() => this._layout());
    this.resizeObserver.observe(this.el);
  }

  _makeFrame() {
    const frame = document.createElement("iframe");
    // Scripts run (Tailwind, React, Vue…), but the page gets an opaque origin: it
    // cannot reach this app, its storage or its cookies.
    frame.setAttribute("sandbox", "allow-scripts");
    frame.setAttribute("referrerpolicy", "no-referrer");
    frame.title = this.title;
    return frame;
  }

  /** Shows `code` (the whole document); `final` skips the streaming interval. */
  show(code, { final = false } = {}) {
    if (code === this.shown && this.pending === null && !this.inflight) return;
    this.pending = code;
    this.pendingFinal = final;
    this._schedule();
  }

  _schedule() {
    clearTimeout(this.timer);
    if (this.inflight || this.pending === null) return;
    const wait = this.pendingFinal ? 0 : this.lastRender + MIN_INTERVAL_MS - performance.now();
    if (wait <= 0) this._render();
    else this.timer = setTimeout(() => requestAnimationFrame(() => this._render()), wait);
  }

  async _render() {
    if (this.inflight || this.pending === null) return;
    const code = this.pending;
    this.pending = null;
    if (code === this.shown) return;
    this.lastRender = performance.now();
    const seq = ++renders;
    const back = this._makeFrame();
    back.classList.add("is-back");
    this.inflight = { frame: back, seq, code, failures: [] };
    const info = await vendor();
    if (this.inflight?.seq !== seq) return;
    const rendered = rewriteCdnUrls(code, info, location.origin);
    const page = withKeyRelay(injectReporter(rendered, reporterScript(seq)));
    this.info = info;
    this.inflight.deadline = setTimeout(() => this._swap(seq), SWAP_DEADLINE_MS);
    this._layoutFrame(back);
    // Beneath the shown frame, not hidden: Chromium throttles the animation frames of a
    // hidden cross-origin frame, and the reporter waits on two of them.
    back.srcdoc = page;
    this.el.insertBefore(back, this.frame);
    // After insertion, so the initial empty document's load does not count. A load without
    // a painted message (a page that stops its scripts) still swaps.
    back.addEventListener("load", () => this._swap(seq), { once: true });
    this.placeholder.hidden = Boolean(code);
  }

  _swap(seq) {
    const next = this.inflight;
    if (!next || next.seq !== seq) return;
    clearTimeout(next.deadline);
    this.inflight = null;
    const old = this.frame;
    next.frame.classList.remove("is-back");
    next.frame.dataset.testid = this.testId;
    delete old.dataset.testid;
    this.frame = next.frame;
    this.shown = next.code;
    this.failures = next.failures;
    this.el.dataset.rendered = String(seq);
    old.remove();
    this._renderNotice();
    this._schedule();
  }

  _message(event) {
    const target = this.inflight?.frame === event.source ? this.inflight : null;
    const current = this.frame.contentWindow === event.source;
    if (!target && !current) return;
    const seq = target ? target.seq : Number(this.el.dataset.rendered);
    const data = readMessage(event, event.source, seq);
    if (!data) return;
    if (data.kind === "painted" && target) this._swap(seq);
    else if (data.kind === "failed") {
      (target ? target.failures : this.failures).push(data);
      if (!target) this._renderNotice();
    }
  }

  _renderNotice() {
    // Each render reports its own failures; the notice describes the page shown.
    const info = this.info ?? { available: false, hosts: [] };
    const lines = describeFailures(this.failures, info, location.origin);
    this.notice.textContent = lines.join(" ");
    this.notice.title = lines.join("\n");
    this.notice.hidden = lines.length === 0;
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
    this._layoutFrame(this.frame);
    if (this.inflight) this._layoutFrame(this.inflight.frame);
  }

  _layoutFrame(frame) {
    const { width: stageWidth, height: stageHeight } = this.el.getBoundingClientRect();
    if (!stageWidth || !stageHeight) return;
    const vp = VIEWPORTS[this.viewport];
    const style = frame.style;
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
    if (this.inflight) clearTimeout(this.inflight.deadline);
    window.removeEventListener("message", this.onMessage);
    this.resizeObserver.disconnect();
  }
}
