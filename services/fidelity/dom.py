"""A rendered page's text as the metrics read it: one script every renderer evaluates.

It returns the visible text nodes as blocks (an HTML reference is compared node by node)
and the same nodes' words with their boxes (a PNG reference's OCR blocks are compared with
words grouped by `lines.group_words`). `s2c eval` and the tool workers' fidelity score both
evaluate it, so both read a page the same way.
"""

from __future__ import annotations

from typing import Any

from services.fidelity.lines import Word
from services.fidelity.metrics import Block, Color, PageBlocks

# Every visible text node with its box (page coordinates) and its colour as sRGB: a
# canvas turns any CSS colour syntax (oklch, color-mix…) into plain 0-255 channels, and a
# translucent colour is taken over white. Each node's words get their own boxes (a range
# per word) for the comparison with OCR words.
EXTRACT_JS = """
() => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const toRgb = (css) => {
    ctx.clearRect(0, 0, 1, 1);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, 1, 1);
    ctx.fillStyle = css;
    ctx.fillRect(0, 0, 1, 1);
    const d = ctx.getImageData(0, 0, 1, 1).data;
    return [d[0], d[1], d[2]];
  };
  const skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'TITLE', 'HEAD']);
  const root = document.body || document.documentElement;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const blocks = [];
  const words = [];
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.replace(/\\s+/g, ' ').trim();
    const el = node.parentElement;
    if (!text || !el || skip.has(el.tagName)) continue;
    if (!el.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
    range.selectNodeContents(node);
    const r = range.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) continue;
    const color = toRgb(getComputedStyle(el).color);
    blocks.push({text, x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height,
                 color});
    const raw = node.textContent;
    for (const m of raw.matchAll(/\\S+/g)) {
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const wr = range.getBoundingClientRect();
      if (wr.width < 1 || wr.height < 1) continue;
      words.push({text: m[0], x: wr.left + scrollX, y: wr.top + scrollY, w: wr.width,
                  h: wr.height, color});
    }
  }
  const doc = document.documentElement;
  return {blocks, words, width: Math.max(doc.scrollWidth, innerWidth),
          height: Math.max(doc.scrollHeight, innerHeight)};
}
"""


def _color(raw: Any) -> Color:
    r, g, b = (int(v) for v in raw)
    return (r, g, b)


def blocks_from_js(data: dict[str, Any]) -> PageBlocks:
    blocks = tuple(
        Block(
            str(b["text"]),
            float(b["x"]),
            float(b["y"]),
            float(b["w"]),
            float(b["h"]),
            _color(b["color"]),
        )
        for b in data["blocks"]
    )
    return PageBlocks(blocks, float(data["width"]), float(data["height"]))


def words_from_js(data: dict[str, Any], height: float) -> tuple[Word, ...]:
    """The page's words above `height` (the screenshot's cut: OCR sees nothing below)."""
    return tuple(
        Word(
            str(w["text"]),
            float(w["x"]),
            float(w["y"]),
            float(w["w"]),
            float(w["h"]),
            _color(w["color"]),
        )
        for w in data.get("words", ())
        if float(w["y"]) + float(w["h"]) / 2 < height
    )
