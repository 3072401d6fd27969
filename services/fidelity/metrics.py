"""Fidelity metrics of a candidate page against its reference (definitions: docs/eval.md).

Every score is in [0, 1], 1 meaning "the same". The block metrics compare the text blocks
read from both pages' DOMs; `visual` compares the two screenshots as images. A reference
with no DOM (a PNG) has no blocks, so only `visual` applies to it and the block metrics
are None.
"""

from __future__ import annotations

import io
from dataclasses import asdict, dataclass
from difflib import SequenceMatcher
from typing import TYPE_CHECKING

from PIL import Image

from services.fidelity.stop import Stop

# NumPy, SciPy and scikit-image load on the first score, in the functions that use them:
# a tool worker that never scores does not carry them (about 100 MB; issue 42).
if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# Pairs whose texts are less alike than this are not the same block (Design2Code's 0.5).
MATCH_THRESHOLD = 0.5
# Ties in text similarity (three "Learn more" links) are broken by distance, so that
# identical pages pair each block with itself; small enough never to beat a text difference
# of one character in a hundred.
POSITION_TIE_BREAK = 0.001
# A colour difference of this many CIEDE2000 units or more scores 0.
DELTA_E_SCALE = 100.0
# The fixed size (width, height) both screenshots are resized to for `visual`. Small on
# purpose: SSIM's 7-pixel window then spans a region of the page (about 70 × 40 px of a
# 1000 px wide one), so it compares layout (bands, cards, text lines), not glyph edges;
# at 384 × 512 a blank page still scored 0.86 against a sparse light one, at this size 0.7.
VISUAL_SIZE = (96, 128)

Color = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Block:
    """One visible text node: its text (whitespace collapsed), box in page pixels, colour."""

    text: str
    x: float
    y: float
    w: float
    h: float
    color: Color


@dataclass(frozen=True, slots=True)
class PageBlocks:
    """The text blocks of one page and the page's size in CSS pixels."""

    blocks: tuple[Block, ...]
    width: float
    height: float


@dataclass(frozen=True, slots=True)
class Scores:
    block_match: float | None
    text: float | None
    position: float | None
    color: float | None
    visual: float

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


METRICS = ("block_match", "text", "position", "color", "visual")


def text_similarity(a: str, b: str) -> float:
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def _centres(page: PageBlocks) -> NDArray[np.float64]:
    """Block centres as fractions of the page's width and height."""
    import numpy as np

    w, h = max(page.width, 1.0), max(page.height, 1.0)
    return np.array(
        [((b.x + b.w / 2) / w, (b.y + b.h / 2) / h) for b in page.blocks], dtype=np.float64
    ).reshape(-1, 2)


def match_blocks(
    ref: PageBlocks, cand: PageBlocks, stop: Stop | None = None
) -> list[tuple[int, int, float]]:
    """The one-to-one pairing (reference index, candidate index, text similarity) that
    maximises the summed text similarity; pairs under MATCH_THRESHOLD are dropped.
    `stop` is checked before each comparison (Stopped): there are N × M of them."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    if not ref.blocks or not cand.blocks:
        return []
    stop = stop or Stop()
    sim = np.empty((len(ref.blocks), len(cand.blocks)), dtype=np.float64)
    for i, r in enumerate(ref.blocks):
        for j, c in enumerate(cand.blocks):
            stop.check()
            sim[i, j] = text_similarity(r.text, c.text)
    rc, cc = _centres(ref), _centres(cand)
    distance = np.abs(rc[:, None, :] - cc[None, :, :]).max(axis=2)
    rows, cols = linear_sum_assignment(sim - POSITION_TIE_BREAK * distance, maximize=True)
    return [
        (int(r), int(c), float(sim[r, c]))
        for r, c in zip(rows, cols, strict=True)
        if sim[r, c] >= MATCH_THRESHOLD
    ]


def _areas(page: PageBlocks) -> NDArray[np.float64]:
    """Block areas as fractions of the page's area (pages of different sizes compare)."""
    import numpy as np

    area = max(page.width, 1.0) * max(page.height, 1.0)
    return np.array([b.w * b.h / area for b in page.blocks], dtype=np.float64)


def block_scores(
    ref: PageBlocks, cand: PageBlocks, stop: Stop | None = None
) -> tuple[float, float, float, float]:
    """(block_match, text, position, color) of `cand` against `ref`."""
    import numpy as np
    from skimage.color import deltaE_ciede2000, rgb2lab

    if not ref.blocks and not cand.blocks:
        return 1.0, 1.0, 1.0, 1.0  # two pages without text agree on all of it
    pairs = match_blocks(ref, cand, stop)
    if not pairs:
        return 0.0, 0.0, 0.0, 0.0
    ri = np.array([p[0] for p in pairs])
    ci = np.array([p[1] for p in pairs])
    ra, ca = _areas(ref), _areas(cand)
    total = ra.sum() + ca.sum()
    block_match = float((ra[ri].sum() + ca[ci].sum()) / total) if total > 0 else 0.0
    text = float(np.mean([p[2] for p in pairs]))
    offsets = np.abs(_centres(ref)[ri] - _centres(cand)[ci]).max(axis=1)
    position = float(np.mean(np.clip(1.0 - offsets, 0.0, 1.0)))
    rgb_r = np.array([ref.blocks[i].color for i in ri], dtype=np.float64) / 255.0
    rgb_c = np.array([cand.blocks[i].color for i in ci], dtype=np.float64) / 255.0
    delta = deltaE_ciede2000(rgb2lab(rgb_r), rgb2lab(rgb_c))  # type: ignore[no-untyped-call]
    color = float(np.mean(np.clip(1.0 - delta / DELTA_E_SCALE, 0.0, 1.0)))
    return block_match, text, position, color


def centre_offset(ref: PageBlocks, a: Block, cand: PageBlocks, b: Block) -> float:
    """The larger of the horizontal and vertical centre offsets of `a` (on `ref`) and `b`
    (on `cand`), as fractions of each page's size: what `position` averages."""
    ax = (a.x + a.w / 2) / max(ref.width, 1.0)
    ay = (a.y + a.h / 2) / max(ref.height, 1.0)
    bx = (b.x + b.w / 2) / max(cand.width, 1.0)
    by = (b.y + b.h / 2) / max(cand.height, 1.0)
    return max(abs(ax - bx), abs(ay - by))


def block_color_closeness(a: Color, b: Color) -> float:
    """1 − ΔE₀₀ / DELTA_E_SCALE of two colours, clipped at 0: what `color` averages."""
    import numpy as np
    from skimage.color import deltaE_ciede2000, rgb2lab

    lab = rgb2lab(np.array([a, b], dtype=np.float64) / 255.0)
    delta = float(deltaE_ciede2000(lab[0], lab[1]))  # type: ignore[no-untyped-call]
    return max(0.0, 1.0 - delta / DELTA_E_SCALE)


def _gray(png: bytes) -> NDArray[np.float64]:
    import numpy as np

    with Image.open(io.BytesIO(png)) as image:
        # Transparent pixels count as white, as a browser shows them on a blank page.
        rgba = image.convert("RGBA")
        flat = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        flat.alpha_composite(rgba)
        small = flat.convert("L").resize(VISUAL_SIZE, Image.Resampling.BILINEAR)
    return np.asarray(small, dtype=np.float64)


def visual_score(ref_png: bytes, cand_png: bytes) -> float:
    """SSIM of the two screenshots in grayscale at VISUAL_SIZE, negatives as 0."""
    import numpy as np
    from skimage.metrics import structural_similarity

    ssim = structural_similarity(_gray(ref_png), _gray(cand_png), data_range=255.0)  # type: ignore[no-untyped-call]
    return float(np.clip(ssim, 0.0, 1.0))


def score(
    ref: PageBlocks | None, ref_png: bytes, cand: PageBlocks | None, cand_png: bytes
) -> Scores:
    """All metrics; a page without a DOM (a PNG reference) leaves the block metrics None."""
    visual = visual_score(ref_png, cand_png)
    if ref is None or cand is None:
        return Scores(None, None, None, None, visual)
    return Scores(*block_scores(ref, cand), visual)
