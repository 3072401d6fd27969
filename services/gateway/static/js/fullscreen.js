// The full-screen view of one option: a modal dialog over the whole window (everything
// else is inert), its toolbar in view, the preview at full size. Escape leaves it
// wherever the focus is, the preview frame included (framekeys.js relays the frame's
// keys); the arrow keys step to the previous and next option. The card goes full screen
// where it is: moved elsewhere in the document, its preview frame would reload.

import { relayedKey } from "./framekeys.js";

// Where the arrow keys move a caret, a selection or a scroll position, not the view.
const OWN_ARROWS = "input, textarea, select, pre, [contenteditable]";
// What stays live over the view: dialogs opened from it (the image lightbox) and toasts.
const ABOVE = "dialog, .toasts, script";

export class FullScreen {
  /** `cards()`: the cards on screen, in order. */
  constructor(cards) {
    this.cards = cards;
    this.card = null;
    this.inert = [];
    document.addEventListener("keydown", (event) => this._onKey(event));
    window.addEventListener("message", (event) => {
      if (this.card && relayedKey(event, this.card.preview.frame) === "Escape" && !dialogOpen()) this.close();
    });
  }

  toggle(card) {
    if (this.card === card) this.close();
    else this.open(card);
  }

  open(card) {
    if (this.card) this._leave();
    const cards = this.cards();
    this.card = card;
    card.setFullScreen(true, { position: cards.indexOf(card) + 1, count: cards.length });
    document.body.classList.add("has-fullscreen");
    this.inert = inertOutside(card.el);
    card.closeButton.focus({ preventScroll: true });
  }

  /** Leaves the view; the focus goes back to the card's own full-screen button. */
  close({ restoreFocus = true } = {}) {
    const card = this.card;
    if (!card) return;
    this._leave();
    document.body.classList.remove("has-fullscreen");
    if (restoreFocus) card.expandButton.focus({ preventScroll: true });
  }

  step(delta) {
    const cards = this.cards();
    const at = cards.indexOf(this.card);
    if (at < 0 || cards.length < 2) return;
    this.open(cards[(at + delta + cards.length) % cards.length]);
  }

  _leave() {
    for (const el of this.inert) el.inert = false;
    this.inert = [];
    this.card.setFullScreen(false);
    this.card = null;
  }

  _onKey(event) {
    if (!this.card || event.defaultPrevented || dialogOpen()) return;
    if (event.key === "Escape") {
      event.preventDefault();
      this.close();
      return;
    }
    const arrow = { ArrowLeft: -1, ArrowRight: 1 }[event.key];
    if (!arrow || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    if (event.target instanceof Element && event.target.closest(OWN_ARROWS)) return;
    event.preventDefault();
    this.step(arrow);
  }
}

/** A modal dialog above the view has the keys (its own Escape closes it first). */
function dialogOpen() {
  return document.querySelector("dialog[open]") !== null;
}

/** Makes everything outside `el` inert, but what must stay above it; returns what it changed. */
function inertOutside(el) {
  const changed = [];
  for (let node = el; node.parentElement && node !== document.body; node = node.parentElement) {
    for (const sibling of node.parentElement.children) {
      if (sibling === node || sibling.inert || sibling.matches(ABOVE)) continue;
      sibling.inert = true;
      changed.push(sibling);
    }
  }
  return changed;
}
