// An option's scores in full, in its card: the fidelity per input image and the
// accessibility check per page and width, each violated rule with its impact, how many
// elements break it and the first ones (docs/accessibility.md). Opened by the score
// badges (buttons), so a keyboard or a touch reaches it, not only a mouse's tooltip.

import { checkLine } from "./accessibility.js";
import { h } from "./dom.js";

const SHOWN_NODES = 3;

export class ScoresPanel {
  constructor(index) {
    this.open = false;
    this.buttons = [];
    this.lines = "";
    this.checks = null;
    this.el = h("section", { class: "scores", id: `variant-${index}-scores`, testid: `variant-${index}-scores`, "aria-label": `Scores of option ${index + 1}`, hidden: true });
  }

  toggle() {
    this.open = !this.open;
    this.el.hidden = !this.open;
    for (const b of this.buttons) b.setAttribute("aria-expanded", String(this.open));
  }

  /** Renders `fidelity` (formatFidelity's) and the accessibility checks, when changed:
   * the card's header renders every tick, and a frame replaces the checks' array
   * (addAccessibility), so comparing by identity spares serialising them each time. */
  render(fidelity, checks) {
    const lines = (fidelity?.lines ?? []).join("\n");
    if (lines === this.lines && checks === this.checks) return;
    this.lines = lines;
    this.checks = checks;
    const parts = [];
    if (fidelity) {
      parts.push(h("h3", { text: "Closeness to the screenshot" }), h("ul", { class: "score-lines" }, fidelity.lines.map((line) => h("li", { text: line }))));
    }
    if (checks?.length) {
      parts.push(h("h3", { text: "Accessibility (axe-core, WCAG 2.x A and AA)" }));
      for (const check of checks) {
        parts.push(h("p", { class: "score-check", text: checkLine(check) }));
        if (check.violations.length) parts.push(h("ul", { class: "violations" }, check.violations.map(violation)));
      }
    }
    this.el.replaceChildren(...parts);
  }
}

function violation(v) {
  const rule = v.helpUrl ? h("a", { href: v.helpUrl, target: "_blank", rel: "noopener noreferrer", text: v.ruleId }) : h("strong", { text: v.ruleId });
  const count = `${v.nodeCount} element${v.nodeCount === 1 ? "" : "s"}`;
  return h(
    "li",
    { class: "violation", dataset: { rule: v.ruleId } },
    h("span", { class: "impact", dataset: { impact: v.impact }, text: v.impact }),
    " ",
    rule,
    `: ${v.help} (${count})`,
    v.nodes.length ? h("ul", { class: "violation-nodes" }, v.nodes.slice(0, SHOWN_NODES).map((n) => h("li", {}, h("code", { text: n.selector })))) : null,
  );
}
