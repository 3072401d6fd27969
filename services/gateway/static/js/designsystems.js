// The design systems dialog: the systems saved on the server (`/api/design-systems`, shared
// by everyone who uses it), each one editable and deletable (a delete asks once more), and
// a form for a new one. Every change goes to the server at once; the app then reloads the
// picker and, after a save, picks the system that was saved.

import { h, icon, plural, truncate } from "./dom.js";
import { deleteDesignSystem, saveDesignSystem } from "./media.js";

export class DesignSystemsDialog {
  /**
   * `systems()`: the list the picker holds; `onChange(savedId)`: reload it (and pick
   * `savedId`, when there is one) before the dialog shows the list again.
   */
  constructor(dialog, { token, toast, systems, onChange }) {
    this.dialog = dialog;
    this.token = token;
    this.toast = toast;
    this.systems = systems;
    this.onChange = onChange;
    this.editing = null; // null: no form; "": a new system; else the id being edited
    this.confirming = null; // the id whose delete waits for a second click
    this.busy = false;
    const $ = (selector) => dialog.querySelector(selector);
    this.list = $(".ds-list");
    this.empty = $(".ds-empty");
    this.form = $(".ds-editor");
    this.formTitle = $(".ds-editor-title");
    this.name = this.form.elements.namedItem("name");
    this.content = this.form.elements.namedItem("content");
    this.count = $("#ds-count");
    this.error = $(".form-error");
    this.newButton = $("[data-action=new]");
    $("[data-action=close]").addEventListener("click", () => dialog.close());
    $("[data-action=cancel-edit]").addEventListener("click", () => this.edit(null));
    this.newButton.addEventListener("click", () => this.edit(""));
    this.content.addEventListener("input", () => this._renderCount());
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.save();
    });
    dialog.addEventListener("close", () => {
      this.editing = null;
      this.confirming = null;
    });
  }

  open() {
    this.editing = null;
    this.confirming = null;
    this.render();
    this.dialog.showModal();
  }

  /** Opens the form on a new system (""), a saved one (its id), or closes it (null). */
  edit(id) {
    this.editing = id;
    this.confirming = null;
    const system = this.systems().find((s) => s.id === id);
    this.name.value = system?.name ?? "";
    this.content.value = system?.content ?? "";
    this.render();
    if (id !== null) this.name.focus();
    else this.newButton.focus();
  }

  async save() {
    if (this.busy || this.editing === null) return;
    const id = this.editing || null;
    const name = this.name.value.trim();
    if (!name) {
      this._showError("Give the design system a name.");
      this.name.focus();
      return;
    }
    const saved = await this._run(() => saveDesignSystem({ id, name, content: this.content.value }, { token: this.token }));
    if (!saved) return;
    this.editing = null;
    this.toast(id ? `Saved “${saved.system.name}”` : `Created “${saved.system.name}”, picked for the next generation`, "success");
    await this.onChange(saved.system.id);
    this.render();
    this.newButton.focus();
  }

  async remove(system) {
    if (this.busy) return;
    if (!(await this._run(() => deleteDesignSystem(system.id, { token: this.token })))) return;
    this.confirming = null;
    if (this.editing === system.id) this.editing = null;
    this.toast(`Deleted “${system.name}”`, "success");
    await this.onChange(null);
    this.render();
    this.newButton.focus();
  }

  /** Runs one request with the dialog busy; its answer, or null after showing its error. */
  async _run(request) {
    this.busy = true;
    this._showError("");
    try {
      const answer = await request();
      if (answer.error) {
        this._showError(answer.error);
        return null;
      }
      return answer;
    } finally {
      this.busy = false;
    }
  }

  _showError(text) {
    this.error.textContent = text;
    this.error.hidden = !text;
    // An error about a delete shows while the list does; one about the form, in the form.
    if (text && this.editing === null) this.toast(text, "error");
  }

  render() {
    const systems = this.systems();
    this.list.replaceChildren(...systems.map((system) => this._row(system)));
    this.empty.hidden = systems.length > 0;
    const editing = this.editing !== null;
    this.form.hidden = !editing;
    this.newButton.hidden = editing;
    if (editing) {
      const system = systems.find((s) => s.id === this.editing);
      this.formTitle.textContent = system ? `Edit “${system.name}”` : "New design system";
      this._renderCount();
    } else {
      this._showError("");
    }
  }

  _row(system) {
    const confirming = this.confirming === system.id;
    const actions = confirming
      ? [
          h("span", { class: "ds-confirm", text: "Delete for everyone?" }),
          h("button", { type: "button", class: "danger-button", "aria-label": `Confirm: delete ${system.name}`, testid: "design-system-confirm-delete", onclick: () => this.remove(system) }, "Delete"),
          h("button", { type: "button", class: "ghost-button", onclick: () => this._confirm(null) }, "Keep"),
        ]
      : [
          h("button", { type: "button", class: "icon-button", "aria-label": `Edit ${system.name}`, title: "Edit", testid: "design-system-edit", onclick: () => this.edit(system.id) }, icon("edit")),
          h("button", { type: "button", class: "icon-button", "aria-label": `Delete ${system.name}`, title: "Delete", testid: "design-system-delete", onclick: () => this._confirm(system.id) }, icon("trash")),
        ];
    const preview = system.content.trim().split("\n")[0] || "No rules yet";
    return h(
      "li",
      { class: "ds-item", testid: "design-system-item", "aria-current": this.editing === system.id ? "true" : null },
      icon("palette", "icon ds-icon"),
      h("span", { class: "ds-text" }, h("strong", { text: system.name }), h("small", { text: `${truncate(preview, 80)} · ${plural(system.content.length, "character")}` })),
      h("span", { class: "ds-actions" }, actions),
    );
  }

  _confirm(id) {
    this.confirming = id;
    this.render();
    const target = this.list.querySelector(id ? "[data-testid=design-system-confirm-delete]" : "[data-testid=design-system-edit]");
    target?.focus();
  }

  _renderCount() {
    this.count.textContent = plural(this.content.value.length, "character");
  }
}
