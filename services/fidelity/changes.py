"""Where two renders of a page differ outside the part an update was asked to change
(docs/fidelity.md, "Updates keep what was not asked for").

Both versions are rendered at the same width. The pixels are compared in cells of
CELL × CELL; a cell whose mean difference is over THRESHOLD changed. The target (the
selected element in either version, grown by MARGIN) is left out, and what lies below it
is compared shifted by how much the target's bottom moved: a heading that grew by a line
pushes the rest of the page down, which is the change asked for, not another one.
Changed cells that touch are merged into boxes.

A box is kept only where the page itself changed, not just its layout: each render also
lists its elements, each with a signature (tag, own text, attributes, the computed style
that paints it, never its size or place). A box is reported when it overlaps an element,
outside the target, whose signature the other version lacks (a new text, colour, image,
an element added or gone); a box over elements that only moved or were resized (a flex
neighbour of a heading that grew) is the requested change's reflow, not another change.
"""

from __future__ import annotations

import io
from collections import Counter, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PIL import Image

from services.fidelity.stop import Stop

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# 16 px cells find a changed word (about 16 px high) without a cell per pixel's noise.
CELL = 16
# Mean absolute difference (0-255, over a cell's pixels and channels): anti-aliasing of
# an unchanged page renders the same, so any real repaint is far above this.
THRESHOLD = 6.0
# Around the target: its outline, shadow or focus ring is part of the element asked for.
MARGIN = 16
MAX_REGIONS = 8
MAX_TEXT = 200


@dataclass(frozen=True, slots=True)
class Box:
    x: int
    y: int
    width: int
    height: int

    @property
    def right(self) -> int:
        return self.x + self.width

    @property
    def bottom(self) -> int:
        return self.y + self.height

    def grown(self, by: int) -> Box:
        return Box(self.x - by, self.y - by, self.width + 2 * by, self.height + 2 * by)

    def union(self, other: Box) -> Box:
        x, y = min(self.x, other.x), min(self.y, other.y)
        return Box(x, y, max(self.right, other.right) - x, max(self.bottom, other.bottom) - y)

    def holds(self, x: float, y: float) -> bool:
        return self.x <= x < self.right and self.y <= y < self.bottom

    @classmethod
    def of(cls, data: Any) -> Box | None:
        """The box a page script returned ({x, y, w, h}), or None for none."""
        if not isinstance(data, dict):
            return None
        try:
            x, y, w, h = (float(data[k]) for k in ("x", "y", "w", "h"))
        except (KeyError, TypeError, ValueError):
            return None
        return cls(round(x), round(y), max(1, round(w)), max(1, round(h)))


@dataclass(frozen=True, slots=True)
class Change:
    """A box of the new render (its coordinates) that changed, with both versions'
    text there."""

    box: Box
    before_text: str = ""
    after_text: str = ""


@dataclass(frozen=True, slots=True)
class Element:
    signature: str  # what paints it, not where (ELEMENTS_JS)
    box: Box


@dataclass(frozen=True, slots=True)
class Render:
    """One version rendered: its PNG, its visible words (EXTRACT_JS's `words`), the
    target's box in it, and its elements (None: too many to list; every box counts)."""

    png: bytes
    words: tuple[tuple[str, float, float], ...]  # text and centre of each word
    target: Box
    elements: tuple[Element, ...] | None = None


# Every element of the body with its signature and box (page coordinates); null past
# MAX_ELEMENTS (a page that large keeps every changed box).
MAX_ELEMENTS = 5000
ELEMENTS_JS = f"""
() => {{
  const all = document.body ? [...document.body.querySelectorAll('*')] : [];
  if (all.length > {MAX_ELEMENTS}) return null;
  const props = ['color', 'background-color', 'background-image', 'font-size', 'font-weight',
    'font-style', 'font-family', 'text-decoration-line', 'text-transform', 'letter-spacing',
    'border-top-color', 'border-top-width', 'border-top-style', 'border-radius', 'box-shadow',
    'opacity', 'visibility', 'display', 'list-style-type'];
  return all.map((e) => {{
    const cs = getComputedStyle(e);
    const own = [...e.childNodes].filter((n) => n.nodeType === 3)
      .map((n) => n.textContent).join(' ').replace(/\\s+/g, ' ').trim();
    const attrs = [...e.attributes].filter((a) => a.name !== 'style' && a.name !== 'class')
      .map((a) => a.name + '=' + a.value).join(' ');
    const r = e.getBoundingClientRect();
    return {{s: [e.tagName, own, attrs, ...props.map((p) => cs.getPropertyValue(p))].join('|'),
      x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height}};
  }});
}}
"""


def elements_of(data: Any) -> tuple[Element, ...] | None:
    """ELEMENTS_JS's answer as elements; None when it listed none (too many)."""
    if not isinstance(data, list):
        return None
    out = []
    for e in data:
        box = Box.of(e)
        # Unpainted (zero-sized) elements count by their signature alone.
        if box is not None and float(e["w"]) > 0 and float(e["h"]) > 0:
            out.append(Element(str(e.get("s", "")), box))
        elif isinstance(e, dict):
            out.append(Element(str(e.get("s", "")), Box(0, 0, 0, 0)))
    return tuple(out)


def words_of(data: Any) -> tuple[tuple[str, float, float], ...]:
    """Each word's text and centre, from EXTRACT_JS's answer."""
    out = []
    for w in data.get("words", ()) if isinstance(data, dict) else ():
        try:
            x, y = float(w["x"]) + float(w["w"]) / 2, float(w["y"]) + float(w["h"]) / 2
            out.append((str(w["text"]), x, y))
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(out)


def unrequested_changes(before: Render, after: Render, stop: Stop) -> tuple[Change, ...]:
    """The boxes of `after` that differ from `before` outside the target, largest first
    (at most MAX_REGIONS)."""
    import numpy as np

    old, new = _pixels(before.png), _pixels(after.png)
    # Rows from the target's bottom down are compared shifted by how far it moved.
    split = before.target.bottom
    shift = after.target.bottom - split
    width = min(old.shape[1], new.shape[1])
    below = max(old.shape[0] - split, new.shape[0] - split - shift, 0)
    height = split + below
    aligned_old = _rows(old[:, :width], 0, height)
    aligned_new = np.concatenate(
        [_rows(new[:, :width], 0, split), _rows(new[:, :width], split + shift, below)]
    )
    stop.check()
    changed = _changed_cells(aligned_old, aligned_new)
    # The target in the aligned (previous version's) rows: either version's box above
    # the split, grown by the margin.
    top = min(before.target.y, after.target.y)
    left = min(before.target.x, after.target.x)
    right = max(before.target.right, after.target.right)
    _clear(changed, Box(left, top, right - left, split - top).grown(MARGIN))
    stop.check()
    boxes = sorted(_merged(_components(changed)), key=lambda b: -b.width * b.height)
    painted = _repainted(before, after)
    out: list[Change] = []
    for box in boxes:
        shown = _shifted(box, split, shift)
        if painted is not None and not any(
            _overlap(box if old else shown, e.box) for old, e in painted
        ):
            continue  # only moved or resized: the reflow of the requested change
        if len(out) == MAX_REGIONS:
            break
        out.append(Change(shown, _text_in(before.words, box), _text_in(after.words, shown)))
    return tuple(out)


def _repainted(before: Render, after: Render) -> list[tuple[bool, Element]] | None:
    """The elements outside the target whose signature the other version lacks, each with
    whether it is the previous version's; None when either render listed no elements."""
    if before.elements is None or after.elements is None:
        return None
    pairs: list[tuple[bool, Element]] = []
    for old, mine, theirs, target in (
        (True, before.elements, after.elements, before.target),
        (False, after.elements, before.elements, after.target),
    ):
        counts = Counter(e.signature for e in theirs)
        own = Counter(e.signature for e in mine)
        area = target.grown(MARGIN)
        for e in mine:
            inside = _contains(area, e.box)
            if not inside and own[e.signature] > counts[e.signature]:
                pairs.append((old, e))
    return pairs


def _contains(outer: Box, inner: Box) -> bool:
    return (
        outer.x <= inner.x
        and outer.y <= inner.y
        and inner.right <= outer.right
        and inner.bottom <= outer.bottom
    )


def _pixels(png: bytes) -> npt.NDArray[np.int16]:
    import numpy as np

    with Image.open(io.BytesIO(png)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.int16)


def _rows(pixels: npt.NDArray[np.int16], start: int, count: int) -> npt.NDArray[np.int16]:
    """`count` rows from `start`; rows past either end repeat the nearest row (the
    page's background, in a render as tall as its window or taller): a page that grew
    or shrank changed only where its content differs, not where the window is blank."""
    import numpy as np

    if count <= 0:
        return np.zeros((0, pixels.shape[1], 3), dtype=np.int16)
    rows = np.clip(np.arange(start, start + count), 0, pixels.shape[0] - 1)
    out: npt.NDArray[np.int16] = pixels[rows]
    return out


def _changed_cells(old: npt.NDArray[np.int16], new: npt.NDArray[np.int16]) -> npt.NDArray[np.bool_]:
    import numpy as np

    rows, cols = -(-old.shape[0] // CELL), -(-old.shape[1] // CELL)
    diff = np.zeros((rows * CELL, cols * CELL), dtype=np.float32)
    diff[: old.shape[0], : old.shape[1]] = np.abs(old - new).mean(axis=2)
    cells = diff.reshape(rows, CELL, cols, CELL).mean(axis=(1, 3))
    result: npt.NDArray[np.bool_] = cells > THRESHOLD
    return result


def _clear(changed: npt.NDArray[np.bool_], box: Box) -> None:
    """Marks the cells the box touches unchanged."""
    top, left = max(box.y // CELL, 0), max(box.x // CELL, 0)
    changed[top : -(-box.bottom // CELL), left : -(-box.right // CELL)] = False


def _components(changed: npt.NDArray[np.bool_]) -> list[Box]:
    """One box per group of changed cells touching (sides or corners), in pixels."""
    rows, cols = changed.shape
    seen = [[False] * cols for _ in range(rows)]
    boxes = []
    for r0, c0 in zip(*changed.nonzero(), strict=True):
        if seen[r0][c0]:
            continue
        seen[r0][c0] = True
        queue = deque([(int(r0), int(c0))])
        top, left, bottom, right = int(r0), int(c0), int(r0), int(c0)
        while queue:
            r, c = queue.popleft()
            top, left, bottom, right = min(top, r), min(left, c), max(bottom, r), max(right, c)
            for nr in (r - 1, r, r + 1):
                for nc in (c - 1, c, c + 1):
                    if 0 <= nr < rows and 0 <= nc < cols and not seen[nr][nc] and changed[nr, nc]:
                        seen[nr][nc] = True
                        queue.append((nr, nc))
        h, w = (bottom - top + 1) * CELL, (right - left + 1) * CELL
        boxes.append(Box(left * CELL, top * CELL, w, h))
    return boxes


def _merged(boxes: list[Box]) -> list[Box]:
    """Boxes within a cell of each other as one: a changed paragraph's lines are one
    change, not one per line."""
    merged = list(boxes)
    joined = True
    while joined:
        joined = False
        for i, a in enumerate(merged):
            near = a.grown(CELL)
            j = next((j for j, b in enumerate(merged) if j != i and _overlap(near, b)), None)
            if j is not None:
                merged[i] = a.union(merged[j])
                del merged[j]
                joined = True
                break
    return merged


def _overlap(a: Box, b: Box) -> bool:
    return a.x < b.right and b.x < a.right and a.y < b.bottom and b.y < a.bottom


def _shifted(box: Box, split: int, shift: int) -> Box:
    """A box of the aligned rows in the new render's coordinates."""
    top = box.y + (shift if box.y >= split else 0)
    bottom = box.bottom + (shift if box.bottom > split else 0)
    return Box(box.x, top, box.width, max(1, bottom - top))


def _text_in(words: tuple[tuple[str, float, float], ...], box: Box) -> str:
    text = " ".join(t for t, x, y in words if box.holds(x, y))
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"
