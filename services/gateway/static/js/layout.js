// Where things are on screen. Two columns on a wide window: the input column scrolls on
// its own beside the results. Once a generation starts the "New page" panel folds to a
// one-line summary, so the follow-up box and the versions sit in view next to the
// previews, and the UI brings them there. On a narrow window the columns stack: a started
// run brings the results into view, and the top bar's Input / Results buttons jump
// between the two in one tap.

const NARROW = "(max-width: 980px)";

export class Layout {
  constructor({ newPanel, newToggle, newBody, newSummary, jump, updatePanel, workspace }) {
    this.els = { newPanel, newToggle, newBody, newSummary, jump, updatePanel, workspace };
    newToggle.addEventListener("click", () => this.foldNewPage(newToggle.getAttribute("aria-expanded") === "true"));
    for (const button of jump.querySelectorAll("[data-jump]")) {
      button.addEventListener("click", () => this.jumpTo(document.getElementById(button.dataset.jump)));
    }
  }

  foldNewPage(folded) {
    const { newPanel, newToggle, newBody, newSummary } = this.els;
    newToggle.setAttribute("aria-expanded", String(!folded));
    newPanel.classList.toggle("is-folded", folded);
    // Folding hides what had the focus (Ctrl+Enter in the prompt): the focus goes on to
    // the results rather than dropping to the page's body (a keyboard user's place lost).
    const hadFocus = folded && newBody.contains(document.activeElement);
    newBody.hidden = folded;
    newSummary.hidden = !folded;
    if (hadFocus) this.els.workspace.focus({ preventScroll: true });
  }

  /** The folded panel's line: what a new generation would start from. */
  setSummary(text) {
    this.els.newSummary.textContent = text;
  }

  /** The jump buttons appear once there are results to jump to. */
  setHasResults(has) {
    this.els.jump.hidden = !has;
  }

  /** After a generation starts: the follow-up box beside the previews, or the results. */
  revealRun() {
    const { updatePanel, workspace } = this.els;
    if (narrow()) {
      workspace.scrollIntoView({ block: "start", behavior: motion() });
      return;
    }
    // The page to its top (the run bar and the previews), the input column to the follow-up
    // box: that column scrolls on its own, so moving it leaves the previews where they are.
    if (window.scrollY > 0) window.scrollTo({ top: 0, behavior: motion() });
    const column = updatePanel.parentElement;
    const panel = updatePanel.getBoundingClientRect();
    const box = column.getBoundingClientRect();
    const above = panel.top - box.top;
    const below = panel.bottom - box.bottom;
    const by = above < 0 ? above : below > 0 ? Math.min(below, above) : 0;
    if (by) column.scrollBy({ top: by, behavior: motion() });
  }

  jumpTo(target) {
    target.scrollIntoView({ block: "start", behavior: motion() });
    target.focus({ preventScroll: true });
  }
}

function narrow() {
  return window.matchMedia(NARROW).matches;
}

function motion() {
  return window.matchMedia("(prefers-reduced-motion: reduce)").matches ? "auto" : "smooth";
}
