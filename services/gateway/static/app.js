// The built-in UI: screenshot or prompt in, several variants built live side by side,
// follow-up updates on a selected variant. Speaks the upstream `/generate-code`
// WebSocket protocol as the upstream frontend does, plus the gateway's resumable
// extension, so a dropped connection re-attaches instead of failing the run.

import { VariantCard } from "./js/card.js";
import { DesignSystemsDialog } from "./js/designsystems.js";
import { h, icon, plural, showToast, truncate } from "./js/dom.js";
import { FullScreen } from "./js/fullscreen.js";
import { InputPanel } from "./js/inputs.js";
import { Layout } from "./js/layout.js";
import { ModelPicker, loadModels } from "./js/models.js";
import {
  APP_ERROR_CODE,
  GenerationSocket,
  NORMAL_CLOSE,
  STACKS,
  USER_CLOSE_CODE,
  createParams,
  gatewayToken,
  generateCodeUrl,
  updateParams,
} from "./js/protocol.js";
import {
  bindSettingsDialog,
  hasAnyModelKey,
  loadCredentialSources,
  loadSettings,
  saveSettings,
} from "./js/settings.js";
import { SelectPanel } from "./js/select_panel.js";
import { downloadable } from "./js/site.js";
import { GENERIC_ERROR, applyFrame, endCommit, failureText, newCommit, runSummary, settled } from "./js/state.js";
import { formatTotal } from "./js/usage.js";

const $ = (id) => document.getElementById(id);
const els = {
  fileInput: $("file-input"),
  dropzone: $("dropzone"),
  screenshots: $("screenshots"),
  prompt: $("prompt-input"),
  promptHint: $("prompt-hint"),
  stack: $("stack-select"),
  designSystem: $("design-system-select"),
  designSystemHint: $("design-system-hint"),
  url: $("url-input"),
  capture: $("capture-button"),
  mode: $("input-mode"),
  keyHint: $("key-hint"),
  generate: $("generate-button"),
  cancel: $("cancel-button"),
  runbar: $("runbar"),
  runbarText: $("runbar-text"),
  runUsage: $("run-usage"),
  updatePanel: $("update-panel"),
  updateTarget: $("update-target"),
  updateInput: $("update-input"),
  update: $("update-button"),
  versionsPanel: $("versions-panel"),
  versions: $("versions"),
  empty: $("empty-state"),
  variants: $("variants"),
  toasts: $("toasts"),
  notice: $("notice"),
  noticeText: $("notice-text"),
  lightbox: $("lightbox"),
  lightboxImage: $("lightbox-image"),
  lightboxCaption: $("lightbox-caption"),
  themeButton: $("theme-button"),
};
const layout = new Layout({
  newPanel: $("new-panel"),
  newToggle: $("new-toggle"),
  newBody: $("new-body"),
  newSummary: $("new-summary"),
  jump: $("jump"),
  updatePanel: els.updatePanel,
  workspace: $("workspace"),
});

const settings = loadSettings();
const token = gatewayToken();
// The settings fields come from the server's credential sources (before `data-ready`).
const sources = await loadCredentialSources(token);
// Screenshots are never offered to a model that reads no images (js/models.js).
const picker = new ModelPicker($("model-select"), await loadModels(token), settings, sources);
const app = {
  project: null, // {inputMode, stack, commits}
  viewed: null, // the commit on screen
  running: null, // {commit, socket, reconnecting: null | {attempt, of}}
  cards: [],
};
const fullScreen = new FullScreen(() => app.cards);
const selection = new SelectPanel($, (commit, index) => (app.viewed === commit ? app.cards[index] : null));

// ---------------------------------------------------------------- toasts

const toast = (message, kind = "info") => showToast(els.toasts, message, kind);

// ---------------------------------------------------------------- theme

const THEMES = ["auto", "light", "dark"];

function applyTheme() {
  const theme = THEMES.includes(settings.theme) ? settings.theme : "auto";
  if (theme === "auto") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  const label = theme[0].toUpperCase() + theme.slice(1);
  els.themeButton.querySelector(".theme-label").textContent = label;
  els.themeButton.setAttribute("aria-label", `Colour theme: ${theme}`);
  els.themeButton.querySelector(".theme-icon").replaceChildren(icon(theme === "dark" ? "moon" : theme === "light" ? "sun" : "monitor"));
}

els.themeButton.addEventListener("click", () => {
  settings.theme = THEMES[(THEMES.indexOf(settings.theme) + 1) % THEMES.length];
  saveSettings(settings);
  applyTheme();
});

// ---------------------------------------------------------------- settings

const settingsDialog = bindSettingsDialog($("settings-dialog"), settings, sources, () => {
  toast("Settings saved", "success");
  renderKeyHint();
  picker.render(els.mode.dataset.mode);
});
$("settings-button").addEventListener("click", () => settingsDialog.open());
$("notice-settings").addEventListener("click", () => settingsDialog.open());

function renderKeyHint() {
  els.keyHint.textContent = hasAnyModelKey(settings, sources) ? "using your API key" : "";
}

// ---------------------------------------------------------------- input

for (const { id, label } of STACKS) els.stack.append(h("option", { value: id, text: label }));
els.stack.value = STACKS.some((s) => s.id === settings.stack) ? settings.stack : "html_tailwind";
els.stack.addEventListener("change", () => {
  settings.stack = els.stack.value;
  saveSettings(settings);
  renderNewSummary();
});

const inputs = new InputPanel({ els, settings, store: saveSettings, token, toast, onRender: () => renderNewSummary() });

/** The folded New page panel's line: what a new generation would start from. */
function renderNewSummary() {
  picker.render(els.mode.dataset.mode);
  const system = inputs.designSystems.find((s) => s.id === els.designSystem.value);
  const stack = els.stack.selectedOptions[0]?.textContent ?? "";
  layout.setSummary([els.mode.textContent, stack, system?.name].filter(Boolean).join(" · "));
}

const designSystems = new DesignSystemsDialog($("design-systems-dialog"), {
  token,
  toast,
  systems: () => inputs.designSystems,
  onChange: async (savedId) => {
    await inputs.loadDesignSystems();
    if (savedId) inputs.pickDesignSystem(savedId);
    renderNewSummary();
  },
});
$("design-systems-button").addEventListener("click", () => designSystems.open());

els.prompt.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) generate();
});
els.updateInput.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) update();
});

// ---------------------------------------------------------------- generations

function generate() {
  if (busy()) return;
  const mode = inputs.mode();
  const text = els.prompt.value.trim();
  if (mode === "text" && !text) {
    toast("Add a screenshot or a video, or describe the page first.", "error");
    els.prompt.focus();
    return;
  }
  const images = mode === "image" ? inputs.screenshots.map((s) => s.dataUrl) : [];
  const videos = mode === "video" ? [inputs.video.dataUrl] : [];
  const stack = els.stack.value;
  const designSystem = inputs.designSystem();
  const imageMeta = mode === "image" ? inputs.imageMeta() : null;
  const chosen = { inputMode: mode, text, images, videos, stack, settings, sources, designSystem, imageMeta };
  const params = { ...createParams(chosen), ...picker.param() };
  const label = {
    image: text ? `Screenshot · ${truncate(text, 40)}` : `From ${plural(images.length, "screenshot")}`,
    video: text ? `Video · ${truncate(text, 40)}` : "From a video",
    text: truncate(text, 48),
  }[mode];
  const commit = newCommit({
    kind: "create",
    label,
    seedHistory: [{ role: "user", text, images, videos }],
    count: 2,
  });
  app.project = { inputMode: mode, stack, commits: [commit] };
  start(commit, params);
  layout.foldNewPage(true);
  layout.revealRun();
}

function update() {
  if (busy() || !app.viewed) return;
  const text = els.updateInput.value.trim();
  const commit = app.viewed;
  const parent = commit.variants[commit.selected];
  if (!text) {
    toast("Describe the change first.", "error");
    els.updateInput.focus();
    return;
  }
  if (!parent?.code.trim()) return toast("The selected option has no code to update yet.", "error");
  const [designSystem, selected] = [inputs.designSystem(), selection.html(commit, commit.selected)];
  const { params, variantHistory } = updateParams({ project: app.project, commit, parent, text, settings, sources, designSystem, selected });
  const child = newCommit({
    kind: "update",
    label: truncate(text, 48),
    seedHistory: variantHistory,
    count: 2,
    parent: { commit, variant: commit.selected },
  });
  app.project.commits.push(child);
  els.updateInput.value = "";
  selection.reset();
  start(child, params);
  layout.revealRun();
}

function start(commit, params) {
  // A settled run (scores still coming) is done, not cancelled: the server scores on.
  if (app.running && !busy()) stopWaiting();
  const socket = new GenerationSocket(generateCodeUrl(token), params, {
    onFrame: (frame) => onFrame(commit, frame),
    onClose: (close) => onClose(commit, close),
    onReconnecting: (attempt) => setReconnecting(commit, attempt),
    onResumed: () => setReconnecting(commit, null),
  });
  app.running = { commit, socket, reconnecting: null };
  show(commit);
  renderBusy();
  socket.start();
}

function cardsOf(commit) {
  return app.viewed === commit ? app.cards : [];
}

function onFrame(commit, frame) {
  const change = applyFrame(commit, frame);
  // Every option ended: a new run may start while the scores come.
  if (app.running?.commit === commit && settled(commit)) renderBusy();
  if (change.error) toast(failureText(commit), "error");
  if (commit.demo) showDemoNotice();
  if (app.viewed !== commit) return;
  if (change.layout) {
    renderCards();
    return;
  }
  if (change.allHeaders) for (const card of app.cards) card.invalidate({ header: true });
  if (change.variant !== null) app.cards[change.variant]?.invalidate(change);
}

function setReconnecting(commit, attempt) {
  if (app.running?.commit !== commit) return;
  app.running.reconnecting = attempt;
  renderRunbar(performance.now());
}

function onClose(commit, { code, reason }) {
  if (app.running?.commit === commit) app.running.reconnecting = null;
  if (code === NORMAL_CLOSE) {
    endCommit(commit, "done");
    const failed = commit.variants.filter((v) => v.status === "error").length;
    if (failed) toast(`${plural(failed, "option")} failed; the others are ready.`, "error");
  } else if (code === APP_ERROR_CODE) {
    // The `error` frame before the close was already shown as a toast.
    if (!commit.error) toast(reason || GENERIC_ERROR, "error");
    endCommit(commit, "failed", reason || commit.error || GENERIC_ERROR);
  } else if (code === USER_CLOSE_CODE) {
    // The server ended a generation that was cancelled elsewhere (another tab, the
    // API); the unfinished variants already got their variantError saying so.
    endCommit(commit, "cancelled");
    toast(reason || "The generation was cancelled.");
  } else {
    toast(`Connection error (code ${code}): the connection to the server was lost. Please retry.`, "error");
    endCommit(commit, "failed", "The connection to the server was lost.");
  }
  finish(commit);
}

/** A run is busy until its options end; its scores may come after (state.settled). */
const busy = () => Boolean(app.running) && !settled(app.running.commit);

/** Leaves a settled run to finish its scores on the server, recorded as done. */
function stopWaiting() {
  app.running.socket.detach();
  endCommit(app.running.commit, "done");
  finish(app.running.commit);
}

function cancel() {
  const running = app.running;
  if (!running) return;
  if (!busy()) return stopWaiting();
  running.socket.cancel();
  endCommit(running.commit, "cancelled");
  toast("Code generation cancelled");
  finish(running.commit);
}

function finish(commit) {
  if (app.running?.commit === commit) app.running = null;
  // endCommit closed open events and variants without frames: re-render them all.
  for (const card of cardsOf(commit)) card.invalidate({ header: true, code: true, events: card.variant.events });
  renderBusy();
  renderVersions();
  renderUpdatePanel();
}

// ---------------------------------------------------------------- rendering

function show(commit) {
  app.viewed = commit;
  layout.setHasResults(true);
  renderCards();
  renderVersions();
  renderUpdatePanel();
  renderRunbar(performance.now());
}

function renderCards() {
  fullScreen.close({ restoreFocus: false });
  for (const card of app.cards) card.destroy();
  const commit = app.viewed;
  const handlers = {
    onSelect: select,
    onCopy: copyCode,
    onDownload: downloadCode,
    onDownloadOffline: (variant) => downloadCode(variant, { offline: true }),
    onImage: openImage,
    onExpand: (card) => fullScreen.toggle(card),
    onStep: (delta) => fullScreen.step(delta),
  };
  app.cards = (commit?.variants ?? []).map((variant) => new VariantCard(variant, handlers));
  els.variants.replaceChildren(...app.cards.map((c) => c.el));
  els.variants.dataset.count = String(app.cards.length);
  els.empty.hidden = Boolean(commit);
  for (const card of app.cards) card.setSelected(card.variant.index === commit.selected);
}

function select(index) {
  const commit = app.viewed;
  if (!commit || index >= commit.variants.length) return;
  commit.selected = index;
  for (const card of app.cards) card.setSelected(card.variant.index === index);
  renderUpdatePanel();
}

function renderVersions() {
  const commits = app.project?.commits ?? [];
  els.versionsPanel.hidden = commits.length === 0;
  els.versions.replaceChildren(
    ...commits.map((commit, i) => {
      const from = commit.parent ? ` · from v${commits.indexOf(commit.parent.commit) + 1} option ${commit.parent.variant + 1}` : "";
      return h(
        "li",
        {},
        h(
          "button",
          {
            type: "button",
            class: "version",
            "aria-current": commit === app.viewed ? "true" : null,
            testid: `version-${i + 1}`,
            dataset: { status: commit.status },
            onclick: () => show(commit),
          },
          h("span", { class: "version-tag", text: `v${i + 1}` }),
          h("span", { class: "version-label" }, h("span", { text: commit.label || (commit.kind === "create" ? "Create" : "Update") }), h("small", { text: `${commit.kind}${from}` })),
          h("span", { class: "version-status", title: commit.status, "aria-label": commit.status }),
        ),
      );
    }),
  );
}

function renderUpdatePanel() {
  const commit = app.viewed;
  els.updatePanel.hidden = !commit;
  selection.render(commit, commit?.selected, busy());
  if (!commit) return;
  const version = app.project.commits.indexOf(commit) + 1;
  const parent = commit.variants[commit.selected];
  els.updateTarget.textContent = `Changes apply to option ${commit.selected + 1} of v${version}. Click an option to pick another.`;
  const ready = !busy() && Boolean(parent?.code.trim());
  els.update.disabled = !ready;
  els.update.title = busy() ? "Wait for the current generation" : ready ? "" : "The selected option has no code yet";
}

function renderBusy() {
  els.generate.disabled = busy();
  els.cancel.hidden = !busy();
  renderUpdatePanel();
  renderRunbar(performance.now());
}

function renderRunbar(now) {
  const commit = app.running?.commit ?? app.viewed;
  els.runbar.hidden = !commit;
  if (!commit) return;
  const reconnecting = app.running?.commit === commit ? app.running.reconnecting : null;
  const { state, text } = runSummary(commit, now, reconnecting);
  els.runbarText.textContent = text;
  els.runbar.dataset.state = state;
  const total = formatTotal(commit.variants.map((v) => v.usage));
  els.runUsage.hidden = !total;
  if (total) {
    els.runUsage.textContent = total.text;
    els.runUsage.title = total.title;
  }
}

function showDemoNotice() {
  if (!els.notice.hidden) return;
  els.noticeText.textContent =
    "Running the built-in demo model: no model API key is configured on the server. It builds a real page through the real tools, scripted.";
  els.notice.hidden = false;
  // The banner pushed everything down just after the run was brought into view.
  if (app.running?.commit.startedAt > performance.now() - 2000) layout.revealRun();
}

// ---------------------------------------------------------------- actions

async function copyCode(variant) {
  if (!variant.code) {
    toast("No code to copy yet.", "error");
    return;
  }
  try {
    await navigator.clipboard.writeText(variant.code);
  } catch {
    const area = h("textarea", { class: "visually-hidden" });
    area.value = variant.code;
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  toast(`Copied the code of option ${variant.index + 1}`, "success");
}

async function downloadCode(variant, { offline = false } = {}) {
  const { blob, name, error } = await downloadable(variant, { token, offline });
  if (error) {
    toast(error, "error");
    return;
  }
  const url = URL.createObjectURL(blob);
  const link = h("a", { href: url, download: name, class: "visually-hidden" });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function openImage(src, caption) {
  els.lightboxImage.src = src;
  els.lightboxImage.alt = caption || "Image";
  els.lightboxCaption.textContent = caption || "";
  els.lightbox.showModal();
}
els.lightbox.addEventListener("click", (e) => {
  if (e.target === els.lightbox) els.lightbox.close();
});

els.generate.addEventListener("click", generate);
els.update.addEventListener("click", update);
els.cancel.addEventListener("click", cancel);

setInterval(() => {
  const now = performance.now();
  for (const card of app.cards) card.tick(now);
  if (app.running) renderRunbar(now);
}, 1000);

applyTheme();
inputs.render();
renderKeyHint();
await inputs.loadDesignSystems();
document.documentElement.dataset.ready = "true";
