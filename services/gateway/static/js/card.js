// One variant side by side with the others: header (title, badges, status), live
// preview / code, actions (copy, download, full screen) and the activity feed. Updates are
// batched into one requestAnimationFrame per card, so a fast stream never thrashes. In
// the full-screen view (fullscreen.js) the same card shows its own close and previous /
// next buttons, and its activity beside the preview on demand.

import { ActivityView } from "./activity.js";
import { formatDuration, h, icon } from "./dom.js";
import { relayedPage } from "./framekeys.js";
import { PreviewFrame } from "./preview.js";
import { BUILT_PAGE, buildStatus, fileTree, isBuilt, projectFiles } from "./project.js";
import { inlineProject, siteFiles } from "./site.js";
import { formatAccessibility } from "./accessibility.js";
import { ChangesOverlay } from "./changes.js";
import { formatFidelity, formatRounds, overlayEntry, regionTitle } from "./fidelity.js";
import { ScoresPanel } from "./scores.js";
import { formatUsage } from "./usage.js";

const STATUS_TEXT = { generating: "Generating", complete: "Complete", error: "Error", cancelled: "Cancelled" };

function iconButton(name, label, onclick, testid) {
  return h("button", { type: "button", class: "icon-button", "aria-label": label, title: label, testid, onclick }, icon(name));
}

function segmented(kind, label, options, current, onchange) {
  // On a narrow card the labels are hidden from sight only: they still name the buttons.
  const buttons = options.map(({ id, text, iconName }) =>
    h(
      "button",
      { type: "button", "aria-pressed": String(id === current), title: text, dataset: { value: id }, onclick: () => select(id) },
      iconName ? icon(iconName) : null,
      h("span", { class: "button-label", text }),
    ),
  );
  const group = h("div", { class: `segmented segmented-${kind}`, role: "group", "aria-label": label }, buttons);
  function select(id) {
    for (const b of buttons) b.setAttribute("aria-pressed", String(b.dataset.value === id));
    onchange(id);
  }
  return group;
}

export class VariantCard {
  constructor(variant, { onSelect, onCopy, onDownload, onDownloadOffline, onImage, onExpand, onStep }) {
    const i = variant.index;
    this.variant = variant;
    this.dirtyEvents = new Set();
    this.dirty = { header: true, code: true };
    this.frame = 0;
    this.view = "preview";

    this.selectButton = h(
      "button",
      { type: "button", class: "variant-title", testid: `variant-${i}-select`, "aria-pressed": "false", title: "Use this option for follow-ups", onclick: () => onSelect(i) },
      h("span", { class: "variant-number", text: String(i + 1) }),
      h("span", { text: `Option ${i + 1}` }),
    );
    this.model = h("span", { class: "badge badge-model", testid: `variant-${i}-model`, title: "Model" });
    this.usage = h("span", { class: "badge badge-usage", testid: `variant-${i}-usage`, hidden: true });
    // The scores are buttons that open their breakdown in the card (a tooltip alone is
    // out of reach of keyboard and touch): fidelity per image, accessibility per width.
    this.scores = new ScoresPanel(i);
    const toggle = () => this.scores.toggle();
    this.fidelity = h("button", { type: "button", class: "badge badge-fidelity", testid: `variant-${i}-fidelity`, hidden: true, "aria-expanded": "false", "aria-controls": this.scores.el.id, onclick: toggle });
    this.accessibility = h("button", { type: "button", class: "badge badge-a11y", testid: `variant-${i}-accessibility`, hidden: true, "aria-expanded": "false", "aria-controls": this.scores.el.id, onclick: toggle });
    this.scores.buttons = [this.fidelity, this.accessibility];
    this.status = h("span", { class: "status-pill", testid: `variant-${i}-status`, role: "status" });
    this.selectedChip = h("span", { class: "badge badge-selected", text: "Selected", title: "Follow-ups change this option" });
    // Per-option badges (model, tokens and cost, and whatever later describes an option).
    this.badges = h("span", { class: "variant-badges" }, this.model, this.usage, this.fidelity, this.accessibility);
    this.position = h("span", { class: "fs-position", testid: `variant-${i}-position` });
    this.closeButton = iconButton("x", "Close full screen", () => onExpand(this), `variant-${i}-close`);
    this.closeButton.title = "Close full screen (Esc)";
    const fullScreenNav = h(
      "span",
      { class: "fs-nav" },
      iconButton("chevronLeft", "Previous option", () => onStep(-1), `variant-${i}-previous`),
      this.position,
      iconButton("chevronRight", "Next option", () => onStep(1), `variant-${i}-next`),
      this.closeButton,
    );
    this.message = h("p", { class: "variant-message", testid: `variant-${i}-message` });

    this.preview = new PreviewFrame({ testId: `variant-${i}-preview`, title: `Preview of option ${i + 1}` });
    // A site of several pages: one tab per page, and its links open the page they name.
    this.page = "index.html";
    this.pageList = "";
    this.tabs = h("div", { class: "page-tabs", role: "tablist", "aria-label": `Pages of option ${i + 1}`, testid: `variant-${i}-pages`, hidden: true });
    this.onPageMessage = (event) => {
      const path = relayedPage(event, this.preview.frame);
      if (path !== null) this.openPage(path);
    };
    window.addEventListener("message", this.onPageMessage);
    // A built project's files and build status, beside its code (project.js).
    this.file = BUILT_PAGE;
    this.fileList = "";
    this.projectPanel = h("nav", { class: "project-files", testid: `variant-${i}-files`, "aria-label": `Files of option ${i + 1}`, hidden: true });
    this.codeView = h("pre", { class: "code-view", testid: `variant-${i}-code`, tabindex: "0", "aria-label": `Code of option ${i + 1}`, hidden: true }, h("code"));
    this.downloadButton = iconButton("download", "Download index.html", () => onDownload(this.variant), `variant-${i}-download`);
    this.offlineButton = iconButton(
      "archive",
      "Download for offline use (zip with its CDN runtimes)",
      () => onDownloadOffline(this.variant),
      `variant-${i}-download-offline`,
    );
    this.expandButton = iconButton("expand", "Full screen", () => onExpand(this), `variant-${i}-expand`);
    this.expandButton.classList.add("expand-button");
    this.activityButton = h(
      "button",
      { type: "button", class: "ghost-button activity-toggle", "aria-pressed": "false", testid: `variant-${i}-activity-toggle`, onclick: () => this.showActivity(!this.activityShown) },
      icon("sparkles"),
      h("span", { class: "button-label", text: "Activity" }),
    );
    this.activityShown = false;
    // Where the page differs most from the screenshot (the score's regions), drawn over
    // the preview on demand.
    this.overlay = h("div", { class: "fidelity-overlay", testid: `variant-${i}-regions`, "aria-hidden": "true", hidden: true });
    this.overlayShown = false;
    this.overlayKey = "";
    this.changes = new ChangesOverlay(i);
    this.regionsButton = h(
      "button",
      { type: "button", class: "ghost-button regions-toggle", "aria-pressed": "false", testid: `variant-${i}-regions-toggle`, hidden: true, title: "Show where the page differs most from the screenshot", onclick: () => this.showRegions(!this.overlayShown) },
      icon("eye"),
      h("span", { class: "button-label", text: "Differences" }),
    );
    const toolbar = h(
      "div",
      { class: "variant-toolbar" },
      segmented("view", "Preview or code", [{ id: "preview", text: "Preview", iconName: "eye" }, { id: "code", text: "Code", iconName: "code" }], "preview", (v) => this.setView(v)),
      segmented("size", "Preview size", [{ id: "desktop", text: "Desktop", iconName: "monitor" }, { id: "mobile", text: "Mobile", iconName: "phone" }], "desktop", (v) => this.preview.setViewport(v)),
      h("span", { class: "spacer" }),
      this.regionsButton,
      this.activityButton,
      iconButton("copy", "Copy code", () => onCopy(this.variant), `variant-${i}-copy`),
      this.downloadButton,
      this.offlineButton,
      this.expandButton,
    );
    this.activity = new ActivityView(i, { onImage });

    this.el = h(
      "article",
      { class: "variant", testid: `variant-${i}`, "aria-label": `Option ${i + 1}` },
      h(
        "header",
        { class: "variant-head" },
        this.selectButton,
        this.badges,
        h("span", { class: "spacer" }),
        this.selectedChip,
        this.status,
        fullScreenNav,
      ),
      this.message,
      this.scores.el,
      toolbar,
      this.tabs,
      h("div", { class: "variant-stage" }, this.preview.el, this.overlay, this.changes.el, this.projectPanel, this.codeView),
      this.activity.el,
    );
    this.el.addEventListener("click", (e) => {
      if (!e.target.closest("button, a, details, summary, pre, iframe, input")) onSelect(i);
    });
    this.preview.setViewport("desktop");
    this.activity.reset(variant);
    this.schedule();
  }

  setSelected(selected) {
    this.el.classList.toggle("is-selected", selected);
    this.selectButton.setAttribute("aria-pressed", String(selected));
  }

  setView(view) {
    this.view = view;
    this.preview.el.hidden = view !== "preview";
    this.codeView.hidden = view !== "code";
    this.projectPanel.hidden = view !== "code" || !isBuilt(this.variant);
    this._renderRegions();
    if (view === "code") this._renderCode();
  }

  /** In or out of the full-screen view: a modal dialog named after the option. */
  setFullScreen(on, { position = 0, count = 0 } = {}) {
    const i = this.variant.index;
    this.el.classList.toggle("is-fullscreen", on);
    for (const [name, value] of [
      ["role", "dialog"],
      ["aria-modal", "true"],
    ]) {
      if (on) this.el.setAttribute(name, value);
      else this.el.removeAttribute(name);
    }
    this.el.setAttribute("aria-label", on ? `Option ${i + 1}, full screen` : `Option ${i + 1}`);
    this.el.dataset.options = String(count);
    this.position.textContent = on ? `${position} / ${count}` : "";
    const label = on ? "Close full screen" : "Full screen";
    this.expandButton.setAttribute("aria-label", label);
    this.expandButton.title = label;
    this.expandButton.replaceChildren(icon(on ? "collapse" : "expand"));
    // Beside the preview when the window has room for both at full size.
    this.showActivity(on && window.innerWidth >= 1720);
  }

  showRegions(shown) {
    this.overlayShown = shown;
    this.regionsButton.setAttribute("aria-pressed", String(shown));
    this._renderRegions();
  }

  /** The regions of the score of the page on show, at the width nearest the preview's. */
  _renderRegions() {
    const width = this.preview.viewport === "mobile" ? 390 : 1280;
    const stageWidth = this.preview.el.getBoundingClientRect().width;
    const onEntry = this.view === "preview" && this.page === "index.html";
    this.changes.render(this.variant.changes, { shown: onEntry, width, stage: stageWidth });
    const entry = overlayEntry(this.variant.fidelity, this.page, width);
    this.regionsButton.hidden = !entry;
    this.overlay.hidden = !(entry && this.overlayShown && this.view === "preview");
    if (this.overlay.hidden) return;
    const stage = this.preview.el.getBoundingClientRect().width || width;
    const scale = stage / (entry.viewportWidth || width);
    const key = `${entry.imageIndex}:${entry.viewportWidth}:${entry.regions.length}:${scale}`;
    if (key === this.overlayKey) return;
    this.overlayKey = key;
    // In the screenshot's pixels, scaled so its width is the stage's: over the top of the
    // page as the screenshot laid it out (it does not follow the preview's scroll).
    this.overlay.replaceChildren(
      ...entry.regions.map((r) => {
        const box = h("div", { class: "fidelity-region", dataset: { issue: r.issue }, title: regionTitle(r) });
        // Through the CSSOM: the page's CSP allows no inline style attributes.
        Object.assign(box.style, { left: `${r.x * scale}px`, top: `${r.y * scale}px`, width: `${r.width * scale}px`, height: `${r.height * scale}px` });
        return box;
      }),
    );
  }

  showActivity(shown) {
    this.activityShown = shown;
    this.el.classList.toggle("shows-activity", shown);
    this.activityButton.setAttribute("aria-pressed", String(shown));
  }

  /** Marks parts dirty; everything is rendered on the next animation frame. */
  invalidate({ header = false, code = false, events = [] } = {}) {
    if (header) this.dirty.header = true;
    if (code) this.dirty.code = true;
    for (const ev of events) this.dirtyEvents.add(ev);
    this.schedule();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.flush();
    });
  }

  flush() {
    const variant = this.variant;
    for (const ev of this.dirtyEvents) this.activity.render(variant, ev);
    this.dirtyEvents.clear();
    if (this.dirty.code) {
      this.dirty.code = false;
      this._renderTabs();
      this.preview.show(this.previewCode(), { final: variant.status !== "generating" });
      this.activity.refreshCode(variant);
      if (this.view === "code") this._renderCode();
    }
    if (this.dirty.header) {
      this.dirty.header = false;
      this._renderHeader(performance.now());
    }
  }

  /** The pages of the option: index.html, then the other HTML files in the order they came. */
  pages() {
    return ["index.html", ...Object.keys(this.variant.files).filter((p) => /\.html?$/i.test(p) && p !== "index.html")];
  }

  /** The code of the page on show. */
  pageCode() {
    return this.page === "index.html" ? this.variant.code : (this.variant.files[this.page] ?? "");
  }

  /** The page on show as the preview renders it: with the site's own .css/.js inline. */
  previewCode() {
    const code = this.pageCode();
    return Object.keys(this.variant.files).length ? inlineProject(code, this.page, siteFiles(this.variant)) : code;
  }

  /** Shows `path` when it is one of the option's pages (a tab, or a link in the preview). */
  openPage(path) {
    if (!this.pages().includes(path) || path === this.page) return;
    this.page = path;
    this.invalidate({ code: true });
  }

  _renderTabs() {
    const pages = this.pages();
    const list = pages.join("\n");
    if (list !== this.pageList) {
      this.pageList = list;
      this.tabs.replaceChildren(
        ...pages.map((path) =>
          h("button", { type: "button", role: "tab", class: "page-tab", text: path, dataset: { path }, onclick: () => this.openPage(path) }),
        ),
      );
    }
    this.tabs.hidden = pages.length < 2;
    const download = Object.keys(this.variant.files).length ? "Download the site (zip)" : "Download index.html";
    this.downloadButton.title = download;
    this.downloadButton.setAttribute("aria-label", download);
    for (const tab of this.tabs.children) tab.setAttribute("aria-selected", String(tab.dataset.path === this.page));
  }

  /** Opens `path` of a built project in the code view. */
  openFile(path) {
    this.file = path;
    this.fileList = "";
    this._renderCode();
  }

  _renderProject() {
    const built = isBuilt(this.variant);
    this.projectPanel.hidden = this.view !== "code" || !built;
    if (!built) return;
    const files = projectFiles(this.variant);
    const status = buildStatus(this.variant);
    const key = [this.file, status?.text, ...(status?.errors ?? []), ...Object.keys(files)].join("\n");
    if (key === this.fileList) return;
    this.fileList = key;
    const rows = fileTree(Object.keys(files)).map((row) =>
      row.path === null
        ? h("div", { class: "tree-folder", text: row.name, style: `--depth: ${row.depth}` })
        : h("button", {
            type: "button",
            class: "tree-file",
            text: row.path === BUILT_PAGE ? `${row.name} (built)` : row.name,
            style: `--depth: ${row.depth}`,
            "aria-current": String(row.path === this.file),
            onclick: () => this.openFile(row.path),
          }),
    );
    const errors = (status?.errors ?? []).map((text) => h("li", { text }));
    this.projectPanel.replaceChildren(
      h("p", { class: "build-status", text: status?.text ?? "", dataset: { ok: String(status?.ok === true) } }),
      h("ul", { class: "build-errors", hidden: errors.length === 0 }, ...errors),
      h("div", { class: "file-tree", role: "list" }, ...rows),
    );
  }

  _renderCode() {
    this._renderProject();
    const code = this.codeView.firstChild;
    const text = isBuilt(this.variant) ? (projectFiles(this.variant)[this.file] ?? "") : this.pageCode();
    if (code.textContent !== text) {
      const follow = this.codeView.scrollHeight - this.codeView.scrollTop - this.codeView.clientHeight < 40;
      code.textContent = text || "No code yet.";
      if (follow && this.variant.status === "generating") this.codeView.scrollTop = this.codeView.scrollHeight;
    }
  }

  _renderHeader(now) {
    const v = this.variant;
    this.el.dataset.state = v.status;
    this.model.textContent = v.model || "model…";
    this.model.classList.toggle("is-demo", v.model === "demo");
    const usage = formatUsage(v.usage);
    this.usage.hidden = !usage;
    if (usage) {
      this.usage.textContent = usage.text;
      this.usage.title = usage.title;
      this.usage.dataset.priced = String(usage.priced);
    }
    const fidelity = formatFidelity(v.fidelity);
    this.fidelity.hidden = !fidelity;
    const rounds = formatRounds(v.rounds);
    if (fidelity) {
      this.fidelity.textContent = v.best ? `★ ${fidelity.text}` : fidelity.text;
      const title = rounds ? `${fidelity.title}\nRefinement, round by round: ${rounds}` : fidelity.title;
      this.fidelity.title = v.best ? `Best match of the options. ${title}` : title;
      this.fidelity.dataset.available = String(fidelity.available);
      this.fidelity.dataset.best = String(v.best === true);
      this.fidelity.setAttribute("aria-label", `${this.fidelity.textContent}: closeness to the screenshot, details`);
    }
    const a11y = formatAccessibility(v.accessibility);
    this.accessibility.hidden = !a11y;
    if (a11y) {
      this.accessibility.textContent = a11y.text;
      this.accessibility.title = a11y.label;
      // The name starts with the text on show, so a speech user can say what they see.
      this.accessibility.setAttribute("aria-label", `${a11y.text}: ${a11y.label}, details`);
      this.accessibility.dataset.available = String(a11y.available);
      this.accessibility.dataset.worst = a11y.worst;
    }
    this.scores.render(fidelity, v.accessibility);
    this.fidelity.dataset.rounds = rounds ?? "";
    this._renderRegions();
    this.el.classList.toggle("is-best", v.best === true);
    this.status.dataset.state = v.status;
    const elapsed = formatDuration((v.endedAt ?? now) - v.startedAt);
    this.status.replaceChildren(
      h("span", { class: "dot", "aria-hidden": "true" }),
      h("span", { text: `${STATUS_TEXT[v.status]} · ${elapsed}` }),
    );
    // Status texts other than the plain "Generating code..." are worth showing (the demo
    // notice is shown once, as a banner, by the app).
    const status = v.status === "generating" && !/^Generating code\.\.\.$|demo model/i.test(v.message) ? v.message : "";
    const message = v.status === "error" ? v.error : status;
    this.message.textContent = message;
    this.message.hidden = !message;
    this.message.classList.toggle("is-error", v.status === "error");
    this.message.title = message;
    if (!v.code) {
      this.preview.setWaitingText(v.status === "generating" ? "Waiting for code…" : "No code was produced.");
    }
    this.activity.updateHead(v, now);
  }

  tick(now) {
    if (this.variant.status === "generating") {
      this._renderHeader(now);
      this.activity.tick(this.variant, now);
    }
  }

  destroy() {
    cancelAnimationFrame(this.frame);
    window.removeEventListener("message", this.onPageMessage);
    this.preview.destroy();
  }
}
