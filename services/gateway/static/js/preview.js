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
  applyAssetMessage,
  bodyMessage,
  canApplyInPlace,
  describeFailures,
  headOf,
  injectReporter,
  loadVendorInfo,
  readMessage,
  reporterScript,
  rewriteCdnUrls,
} from "./preview_assets.js";
import { withKeyRelay } from "./framekeys.js";
import { selectMessage, selectScript, selectedHtml } from "./select.js";

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

/** Whether `code` is still inside its `<head>`: the page shows nothing yet. */
function headStreaming(code) {
  return /<head[\s>]/i.test(code) && !/<\/head\s*>/i.test(code);
}

export class PreviewFrame {
  constructor({ testId, title }) {
    this.viewport = "desktop";
    this.testId = testId;
    this.title = title;
    this.shown = null;
    this.pending = null;
    this.lastRender = -Infinity;
    this.timer = 0;
    // The render under way: { frame, seq, code, failures, deadline } for a new
    // frame, { seq, code, inPlace: true, deadline } for a body swapped in place.
    this.inflight = null;
    this.frameSeq = 0;
    this.frontReady = false;
    this.shownHead = null;
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
    const final = this.pendingFinal;
    // Nothing to see yet (no code, or its head still streaming): a load would cost all.
    if (!code || (!final && headStreaming(code))) return;
    this.pending = null;
    if (code === this.shown) return;
    this.lastRender = performance.now();
    const seq = ++renders;
    if (!final && this.frontReady && canApplyInPlace(code, this.shownHead)) {
      this._applyInPlace(code, seq);
      return;
    }
    const back = this._makeFrame();
    back.classList.add("is-back");
    this.inflight = { frame: back, seq, code, failures: [] };
    const info = await vendor();
    if (this.inflight?.seq !== seq) return;
    const rendered = rewriteCdnUrls(code, info, location.origin);
    const page = withKeyRelay(injectReporter(rendered, reporterScript(seq) + selectScript(seq)));
    this.info = info;
    this.inflight.deadline = setTimeout(() => this._swap(seq), SWAP_DEADLINE_MS);
    this._layoutFrame(back);
    // Beneath the shown frame, not hidden: Chromium throttles a hidden cross-origin frame.
    back.srcdoc = page;
    this.el.insertBefore(back, this.frame);
    // After insertion, so the initial empty document's load does not count. A load without
    // a painted message (a page that stops its scripts) still swaps.
    back.addEventListener("load", () => this._swap(seq, true), { once: true });
    this.placeholder.hidden = Boolean(code);
  }

  /** A streamed update with the shown page's head and no script in its body: the shown
   * frame swaps its body in place, so nothing loads again (and nothing can stall it). */
  _applyInPlace(code, seq) {
    this.inflight = { frame: null, seq, code, inPlace: true };
    this.inflight.deadline = setTimeout(() => this._applied(seq, false), SWAP_DEADLINE_MS);
    const page = rewriteCdnUrls(code, this.info, location.origin);
    this.frame.contentWindow?.postMessage(bodyMessage(page, seq), "*");
  }

  _applied(seq, ok) {
    const next = this.inflight;
    if (!next || next.seq !== seq || !next.inPlace) return;
    clearTimeout(next.deadline);
    this.inflight = null;
    if (ok) {
      this.shown = next.code;
      this.el.dataset.rendered = String(seq);
    } else {
      this.frontReady = false; // the frame did not answer: the next code loads afresh
    }
    this._schedule();
  }

  /** `ready`: the new frame's reporter can take messages (it painted or loaded). */
  _swap(seq, ready = false) {
    const next = this.inflight;
    if (!next || next.seq !== seq || next.inPlace) return;
    clearTimeout(next.deadline);
    this.inflight = null;
    const old = this.frame;
    next.frame.classList.remove("is-back");
    next.frame.dataset.testid = this.testId;
    delete old.dataset.testid;
    this.frame = next.frame;
    this.frameSeq = seq;
    // Its reporter takes a body as soon as it runs (it applies it once parsed): only a
    // frame that loaded nothing for a whole deadline is given up on (frontReady false).
    this.frontReady = ready || headOf(next.code) !== null;
    this.shown = next.code;
    this.shownHead = headOf(next.code);
    this.failures = next.failures;
    this.el.dataset.rendered = String(seq);
    old.remove();
    // A new page: the pick is gone with the old one, picking goes on in the new one.
    if (this.selecting) this._postSelect(false);
    this._renderNotice();
    this._schedule();
  }

  _message(event) {
    const inflight = this.inflight;
    const back = inflight?.frame && inflight.frame.contentWindow === event.source ? inflight : null;
    const current = this.frame.contentWindow === event.source;
    if (!back && !current) return;
    const data = readMessage(event, event.source, back ? back.seq : this.frameSeq);
    if (!data) return;
    if (data.kind === "painted") {
      if (back) {
        this._swap(back.seq, true);
      } else this.frontReady = true;
    } else if (data.kind === "applied" && current) {
      this._applied(data.version, true);
    } else if (current && selectedHtml(data) !== null) {
      this.selecting = false;
      this.onSelected?.(selectedHtml(data));
    } else if (applyAssetMessage(back ? back.failures : this.failures, data) && !back) {
      this._renderNotice();
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

  /** Select and edit (select.js): picking on or off in the shown page; `onSelected(html)`
   * hears of the element clicked, once, and picking ends there. */
  setSelecting(on, onSelected = null) {
    this.selecting = on;
    if (onSelected) this.onSelected = onSelected;
    this._postSelect(false);
  }

  /** Forgets the pick (its outline goes) and ends picking. */
  clearSelection() {
    this.selecting = false;
    this._postSelect(true);
  }

  _postSelect(clear) {
    this.frame.contentWindow?.postMessage(selectMessage(Boolean(this.selecting), clear), "*");
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
    if (this.inflight?.frame) this._layoutFrame(this.inflight.frame);
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
