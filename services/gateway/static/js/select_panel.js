// The follow-up panel's select-and-edit: a toggle that lets the user click an element in
// the preview of the option updates apply to (select.js does the picking in the frame),
// and a line naming the element picked, which the next update carries. A pick belongs to
// one option of one version: picking another option or version forgets it.

import { describeElement } from "./select.js";

export class SelectPanel {
  /** `$(id)`: the page's elements; `cardFor(commit, index)`: the card showing that option,
   * or null. */
  constructor($, cardFor) {
    const [button, line, label, clear] = ["select-button", "update-selection", "update-selection-label", "update-selection-clear"].map($);
    this.els = { button, line, label, clear };
    this.cardFor = cardFor;
    this.picking = null; // {commit, index} while the user is picking
    this.pick = null; // {commit, index, html}
    button.addEventListener("click", () => this.toggle());
    clear.addEventListener("click", () => this.reset());
  }

  /** The HTML of the element picked in that option, or null. */
  html(commit, index) {
    const pick = this.pick;
    return pick && pick.commit === commit && pick.index === index ? pick.html : null;
  }

  toggle() {
    const { commit, index } = this.target ?? {};
    const card = commit ? this.cardFor(commit, index) : null;
    if (!card) return;
    if (this.picking) {
      card.preview.setSelecting(false);
      this.picking = null;
    } else {
      card.setView("preview");
      this.picking = { commit, index };
      card.preview.setSelecting(true, (html) => {
        this.picking = null;
        this.pick = { commit, index, html };
        this._render();
      });
    }
    this._render();
  }

  /** Forgets the pick and stops picking (after an update went out with it). */
  reset() {
    const where = this.pick ?? this.picking;
    if (where) this.cardFor(where.commit, where.index)?.preview.clearSelection();
    this.pick = null;
    this.picking = null;
    this._render();
  }

  /** The option updates apply to now; `busy`: a generation runs (no picking then). */
  render(commit, index, busy) {
    const moved = (where) => where && (where.commit !== commit || where.index !== index);
    if (moved(this.pick) || moved(this.picking)) this.reset();
    this.target = commit ? { commit, index } : null;
    this.busy = busy;
    this._render();
  }

  _render() {
    const { button, line, label } = this.els;
    const ready = Boolean(this.target?.commit.variants[this.target.index]?.code.trim());
    button.disabled = this.busy || !ready;
    button.setAttribute("aria-pressed", String(Boolean(this.picking)));
    button.querySelector(".button-label").textContent = this.picking ? "Click an element in the preview…" : "Select element";
    line.hidden = !this.pick;
    label.textContent = this.pick ? `Change applies to ${describeElement(this.pick.html)}` : "";
    label.title = this.pick?.html ?? "";
  }
}
