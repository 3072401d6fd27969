// The "New page" inputs: screenshots or one video (dropped, pasted or chosen), a web page
// captured by URL (its image becomes a screenshot), and the design-system picker. The
// pure rules (file kinds, modes, the capture and design-system requests) are in media.js.

import { h, plural } from "./dom.js";
import { captureUrl, designSystemParam, inputModeOf, loadDesignSystems, mediaKind } from "./media.js";

function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

function removeButton(label, onclick) {
  return h("button", { type: "button", class: "shot-remove", "aria-label": label, onclick }, "✕");
}

export class InputPanel {
  /**
   * `els`: the panel's elements; `store(settings)` persists the picked design system;
   * `onRender()` hears every change of what a generation would start from.
   */
  constructor({ els, settings, store, token, toast, onRender = () => {} }) {
    this.els = els;
    this.settings = settings;
    this.store = store;
    this.token = token;
    this.toast = toast;
    this.onRender = onRender;
    this.screenshots = []; // [{dataUrl, name}]
    this.video = null; // {dataUrl, name}: a video create uses exactly one
    this.designSystems = []; // [{id, name, content}]
    this.capturing = false;
    this._bind();
  }

  mode() {
    return inputModeOf(this);
  }

  /** The `designSystem` param for the picked system (null for none). */
  designSystem() {
    return designSystemParam(this.designSystems, this.els.designSystem.value);
  }

  async loadDesignSystems() {
    const systems = await loadDesignSystems(this.token);
    const names = (list) => JSON.stringify(list.map((s) => [s.id, s.name]));
    const same = names(systems) === names(this.designSystems);
    this.designSystems = systems; // contents may have changed even when the names did not
    // Rebuilding the options of an open <select> would close it under the user's pointer.
    if (!same || !this.els.designSystem.options.length) this.renderDesignSystems();
  }

  pickDesignSystem(id) {
    this.settings.designSystemId = id;
    this.store(this.settings);
    this.renderDesignSystems();
  }

  renderDesignSystems() {
    const select = this.els.designSystem;
    const wanted = this.settings.designSystemId ?? "";
    select.replaceChildren(
      h("option", { value: "", text: "None" }),
      ...this.designSystems.map((s) => h("option", { value: s.id, text: s.name })),
    );
    select.value = this.designSystems.some((s) => s.id === wanted) ? wanted : "";
    this.els.designSystemHint.textContent = this.designSystems.length ? "its rules guide every option" : "none saved yet";
    this.onRender();
  }

  async addFiles(files) {
    for (const file of files) {
      const { kind, error } = mediaKind(file);
      if (error) {
        this.toast(error, "error");
        continue;
      }
      let dataUrl;
      try {
        dataUrl = await readAsDataUrl(file);
      } catch {
        this.toast(`Could not read ${file.name}.`, "error");
        continue;
      }
      // Upstream's modes are exclusive: a video replaces the screenshots, and back.
      if (kind === "video") {
        this.video = { dataUrl, name: file.name || "video" };
        this.screenshots = [];
      } else {
        this.video = null;
        this.screenshots.push({ dataUrl, name: file.name || "pasted image" });
      }
    }
    this.render();
  }

  async capture() {
    if (this.capturing) return;
    this.capturing = true;
    this._renderCapture();
    try {
      const shot = await captureUrl(this.els.url.value, { token: this.token });
      if (shot.error) {
        this.toast(shot.error, "error");
        return;
      }
      this.video = null;
      this.screenshots.push(shot);
      this.els.url.value = "";
      this.render();
    } finally {
      this.capturing = false;
      this._renderCapture();
    }
  }

  _renderCapture() {
    this.els.capture.disabled = this.capturing;
    this.els.capture.textContent = this.capturing ? "Capturing…" : "Capture";
    this.els.capture.setAttribute("aria-busy", String(this.capturing));
  }

  /** The screenshots' tags, aligned with them; null when none is tagged. */
  imageMeta() {
    const tags = this.screenshots.map((s) => ({ viewportWidth: s.width || undefined, page: s.page || undefined }));
    return tags.some((t) => t.viewportWidth || t.page) ? tags : null;
  }

  render() {
    const shots = this.screenshots.map((shot, i) =>
      h(
        "li",
        { class: "shot" },
        h("img", { src: shot.dataUrl, alt: `Screenshot ${i + 1}: ${shot.name}` }),
        // Optional tags (prompt.imageMeta): the page it shows and the width it was taken at.
        h("input", {
          class: "shot-page",
          placeholder: "page",
          "aria-label": `Page of screenshot ${i + 1} (e.g. pricing)`,
          pattern: "[A-Za-z0-9_-]{1,64}",
          testid: `shot-${i}-page`,
          value: shot.page ?? "",
          oninput: (e) => (shot.page = e.target.value.trim()),
        }),
        h("input", {
          class: "shot-width",
          type: "number",
          min: "240",
          max: "3840",
          placeholder: "width",
          "aria-label": `Viewport width of screenshot ${i + 1} in pixels`,
          testid: `shot-${i}-width`,
          value: shot.width ?? "",
          oninput: (e) => (shot.width = e.target.value ? Number(e.target.value) : undefined),
        }),
        removeButton(`Remove screenshot ${i + 1}`, () => {
          this.screenshots.splice(i, 1);
          this.render();
        }),
      ),
    );
    const video = this.video
      ? h(
          "li",
          { class: "shot shot-video", testid: "video-thumb", title: this.video.name },
          h("video", { src: this.video.dataUrl, muted: true, preload: "metadata", "aria-label": `Video: ${this.video.name}` }),
          h("span", { class: "shot-tag", text: "video" }),
          removeButton("Remove the video", () => {
            this.video = null;
            this.render();
          }),
        )
      : null;
    this.els.screenshots.replaceChildren(...shots, ...(video ? [video] : []));
    const mode = this.mode();
    this.els.dropzone.classList.toggle("has-files", mode !== "text");
    this.els.mode.dataset.mode = mode;
    this.els.mode.textContent = {
      image: `Screenshot mode · ${plural(this.screenshots.length, "image")}`,
      video: "Video mode",
      text: "Text mode",
    }[mode];
    this.els.promptHint.textContent = mode === "text" ? "describe the page to build" : "optional extra instructions";
    this.onRender();
  }

  _bind() {
    const { els } = this;
    els.fileInput.addEventListener("change", () => {
      this.addFiles([...els.fileInput.files]);
      els.fileInput.value = "";
    });
    for (const type of ["dragenter", "dragover"]) {
      els.dropzone.addEventListener(type, (e) => {
        e.preventDefault();
        els.dropzone.classList.add("is-dragging");
      });
    }
    els.dropzone.addEventListener("dragleave", () => els.dropzone.classList.remove("is-dragging"));
    els.dropzone.addEventListener("drop", (e) => {
      e.preventDefault();
      els.dropzone.classList.remove("is-dragging");
      this.addFiles([...(e.dataTransfer?.files ?? [])]);
    });
    // A file dropped anywhere else must not navigate away from the app.
    window.addEventListener("dragover", (e) => e.preventDefault());
    window.addEventListener("drop", (e) => {
      e.preventDefault();
      if (!els.dropzone.contains(e.target)) this.addFiles([...(e.dataTransfer?.files ?? [])]);
    });
    document.addEventListener("paste", (e) => {
      if (e.target === els.url) return; // a pasted address is text, not a file
      const files = [...(e.clipboardData?.items ?? [])]
        .filter((item) => item.kind === "file" && item.type.startsWith("image/"))
        .map((item) => item.getAsFile())
        .filter(Boolean);
      if (files.length) {
        e.preventDefault();
        this.addFiles(files);
      }
    });
    els.capture.addEventListener("click", () => this.capture());
    els.url.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        this.capture();
      }
    });
    els.designSystem.addEventListener("change", () => {
      this.settings.designSystemId = els.designSystem.value;
      this.store(this.settings);
      this.onRender();
    });
    // Systems saved elsewhere (the API, another tab) show up without a reload.
    els.designSystem.addEventListener("focus", () => this.loadDesignSystems());
  }
}
