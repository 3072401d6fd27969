"""Words grouped into text blocks the same way whatever read them (OCR or a DOM).

A screenshot has no DOM: its text comes from OCR as words with boxes. To compare it with a
page's DOM the page's text is taken at the same grain: the words of its visible text nodes
with their boxes, grouped by the same rules. A block is then a paragraph as the eye sees
it: words on one line closer than a gap, and lines stacked closely with the same left
edge (or centre) and a similar height. Both sides go through `group_words`, so the
granularity cannot differ between reference and candidate (docs/eval.md).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from services.fidelity.metrics import Block, Color, PageBlocks

# Words of one line further apart than this many line heights are separate blocks (a nav
# bar's links, two columns); a space between words is about a quarter of one.
WORD_GAP = 0.9
# Lines this close (in line heights) with aligned edges and similar heights are one
# paragraph: wrapped text is one block whatever the width it wraps at.
LINE_GAP = 1.0
ALIGN = 1.0
HEIGHT_RATIO = 1.45
MERGE_LINES = False


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    x: float
    y: float
    w: float
    h: float
    color: Color


@dataclass(slots=True)
class _Line:
    words: list[Word]
    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def h(self) -> float:
        return max(self.y1 - self.y0, 1.0)

    def add(self, word: Word) -> None:
        self.words.append(word)
        self.x0 = min(self.x0, word.x)
        self.y0 = min(self.y0, word.y)
        self.x1 = max(self.x1, word.x + word.w)
        self.y1 = max(self.y1, word.y + word.h)


def _line(word: Word) -> _Line:
    return _Line([word], word.x, word.y, word.x + word.w, word.y + word.h)


def _same_row(line: _Line, word: Word) -> bool:
    overlap = min(line.y1, word.y + word.h) - max(line.y0, word.y)
    return overlap >= 0.5 * min(line.h, max(word.h, 1.0))


def _lines(words: list[Word]) -> list[_Line]:
    """Rows of words (vertical overlap), each cut where the gap between words is wide."""
    rows: list[_Line] = []
    for word in sorted(words, key=lambda w: (w.y + w.h / 2, w.x)):
        row = next((r for r in reversed(rows[-8:]) if _same_row(r, word)), None)
        if row is None:
            rows.append(_line(word))
        else:
            row.add(word)
    lines: list[_Line] = []
    for row in rows:
        current: _Line | None = None
        for word in sorted(row.words, key=lambda w: w.x):
            if current is not None and word.x - current.x1 <= WORD_GAP * row.h:
                current.add(word)
                continue
            current = _line(word)
            lines.append(current)
    return lines


def _joins(upper: _Line, lower: _Line) -> bool:
    h = min(upper.h, lower.h)
    if not 1 / HEIGHT_RATIO <= upper.h / lower.h <= HEIGHT_RATIO:
        return False
    if not -0.3 * h <= lower.y0 - upper.y1 <= LINE_GAP * h:
        return False
    left = abs(upper.x0 - lower.x0) <= ALIGN * h
    centre = abs((upper.x0 + upper.x1) - (lower.x0 + lower.x1)) / 2 <= ALIGN * h
    return left or centre


def _block(lines: list[_Line]) -> Block:
    words = [w for line in lines for w in sorted(line.words, key=lambda w: w.x)]
    colors = Counter[Color]()
    for word in words:
        colors[word.color] += len(word.text)
    x0 = min(line.x0 for line in lines)
    y0 = min(line.y0 for line in lines)
    x1 = max(line.x1 for line in lines)
    y1 = max(line.y1 for line in lines)
    text = " ".join(w.text for w in words)
    return Block(text, x0, y0, x1 - x0, y1 - y0, colors.most_common(1)[0][0])


def group_words(words: list[Word], width: float, height: float) -> PageBlocks:
    """The blocks of a page of `width` × `height` whose words are `words`.

    Words without a letter or digit (a dash, a check mark, a bullet) are left out on both
    sides: OCR drops them as noise, so a DOM line joined only by an em dash would
    otherwise be one block there and two in the screenshot."""
    words = [w for w in words if any(ch.isalnum() for ch in w.text)]
    if not MERGE_LINES:
        lines = sorted(_lines(words), key=lambda ln: (ln.y0, ln.x0))
        return PageBlocks(tuple(_block([ln]) for ln in lines), width, height)
    paragraphs: list[list[_Line]] = []
    for line in sorted(_lines(words), key=lambda ln: (ln.y0, ln.x0)):
        # Only the last few paragraphs can still be open: the page is read top down.
        target = next(
            (p for p in reversed(paragraphs[-12:]) if _joins(p[-1], line)),
            None,
        )
        if target is None:
            paragraphs.append([line])
        else:
            target.append(line)
    return PageBlocks(tuple(_block(p) for p in paragraphs), width, height)
