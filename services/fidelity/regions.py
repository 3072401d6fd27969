"""Where a page differs from its screenshot: the worst-matching text blocks, and a
side-by-side image (what `compare_with_reference` shows the model)."""

from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image

from services.fidelity.metrics import block_color_closeness, centre_offset
from services.fidelity.score import PngScore

# A matched block is reported when its text is less alike than this, its centre further
# than this share of the page, or its colour further than this many CIEDE2000 units.
TEXT_OK = 0.9
POSITION_OK = 0.04
COLOR_OK = 0.9
# Each half of the comparison image is scaled to this width, and cut at this height.
HALF_WIDTH = 480
MAX_HEIGHT = 1400


@dataclass(frozen=True, slots=True)
class Region:
    x: int
    y: int
    width: int
    height: int
    expected_text: str
    actual_text: str
    issue: str  # missing | text | position | color
    badness: float


def worst_regions(result: PngScore, limit: int = 8) -> list[Region]:
    """The screenshot's blocks the page reproduces worst, worst (and largest) first."""
    ref, cand = result.reference, result.candidate
    matched = {r: (c, sim) for r, c, sim in result.pairs}
    area = max(ref.width * ref.height, 1.0)
    regions: list[Region] = []
    for i, block in enumerate(ref.blocks):
        weight = 0.5 + min(block.w * block.h / area * 50, 1.0)
        if i not in matched:
            issue, actual, badness = "missing", "", 1.0
        else:
            c, sim = matched[i]
            other = cand.blocks[c]
            offset = centre_offset(ref, block, cand, other)
            color = block_color_closeness(block.color, other.color)
            actual = other.text
            if sim < TEXT_OK:
                issue, badness = "text", 1.0 - sim
            elif offset > POSITION_OK:
                issue, badness = "position", min(offset * 4, 1.0)
            elif color < COLOR_OK:
                issue, badness = "color", 1.0 - color
            else:
                continue
        regions.append(
            Region(
                round(block.x),
                round(block.y),
                round(block.w),
                round(block.h),
                block.text,
                actual,
                issue,
                badness * weight,
            )
        )
    regions.sort(key=lambda r: -r.badness)
    return regions[:limit]


def side_by_side(ref_png: bytes, cand_png: bytes) -> bytes:
    """The screenshot (left) beside the page (right), each HALF_WIDTH wide."""
    halves = []
    for png in (ref_png, cand_png):
        with Image.open(io.BytesIO(png)) as image:
            rgb = image.convert("RGB")
        scale = HALF_WIDTH / max(rgb.width, 1)
        height = min(max(1, round(rgb.height * scale)), MAX_HEIGHT)
        resized = rgb.resize((HALF_WIDTH, max(1, round(rgb.height * scale))))
        halves.append(resized.crop((0, 0, HALF_WIDTH, height)))
    canvas = Image.new("RGB", (HALF_WIDTH * 2 + 8, max(h.height for h in halves)), (128, 128, 128))
    canvas.paste(halves[0], (0, 0))
    canvas.paste(halves[1], (HALF_WIDTH + 8, 0))
    out = io.BytesIO()
    canvas.save(out, format="PNG", optimize=False)
    return out.getvalue()
