"""One score of a rendered page against a screenshot: the entry point both `s2c eval` (a
PNG reference) and the tool workers' live fidelity score call.

The reference's blocks come from OCR (`ocr.ocr_page`, done once per screenshot and reused
for every candidate), the candidate's from its DOM words, both grouped by
`lines.group_words`; then the metrics of `metrics.py` apply unchanged.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, replace

from PIL import Image

from services.fidelity.lines import Word, group_words
from services.fidelity.metrics import PageBlocks, Scores, block_scores, match_blocks, visual_score
from services.fidelity.ocr import OcrPage
from services.fidelity.stop import Stop

# The most text blocks of each page the match compares, from the top of the page: it
# compares every block of one with every block of the other and then solves an assignment,
# so the work grows with the product (a dense screenshot against an 8,000-word page was
# 458 × 8,000 comparisons, about two CPU-minutes). A score over it says so (`note`).
MAX_BLOCKS = 400


@dataclass(frozen=True, slots=True)
class PngScore:
    """The scores and what they were computed from (the worst regions read it)."""

    scores: Scores
    reference: PageBlocks
    candidate: PageBlocks
    pairs: tuple[tuple[int, int, float], ...]
    note: str = ""  # what the score left out, e.g. blocks past MAX_BLOCKS


def png_size(png: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(png)) as image:
        return image.size


def candidate_blocks(words: Sequence[Word], png: bytes) -> PageBlocks:
    """The candidate's DOM words as blocks, on the page its screenshot shows."""
    width, height = png_size(png)
    return group_words(list(words), float(width), float(height))


def score_png(
    reference: OcrPage,
    ref_png: bytes,
    words: Sequence[Word],
    png: bytes,
    *,
    max_blocks: int = MAX_BLOCKS,
    stop: Stop | None = None,
) -> PngScore:
    """All five metrics of a rendered page (its DOM words and screenshot) against a
    screenshot read by OCR, over the first `max_blocks` blocks of each; Stopped when
    `stop` says so."""
    stop = stop or Stop()
    candidate = candidate_blocks(words, png)
    note = bounded_note(len(reference.page.blocks), len(candidate.blocks), max_blocks)
    ref_page = replace(reference.page, blocks=reference.page.blocks[:max_blocks])
    candidate = replace(candidate, blocks=candidate.blocks[:max_blocks])
    stop.check()
    scores = Scores(*block_scores(ref_page, candidate, stop), visual_score(ref_png, png))
    pairs = tuple(match_blocks(ref_page, candidate, stop))
    return PngScore(scores, ref_page, candidate, pairs, note)


def bounded_note(ref_blocks: int, cand_blocks: int, max_blocks: int) -> str:
    """What a match bounded at `max_blocks` blocks a page left out; empty: nothing."""
    parts = [
        f"the first {max_blocks} of the {count} text blocks of the {side}"
        for side, count in (("screenshot", ref_blocks), ("page", cand_blocks))
        if count > max_blocks
    ]
    if not parts:
        return ""
    return (
        f"matched only {' and '.join(parts)} (at most {max_blocks} a page, "
        "S2C_FIDELITY_MAX_BLOCKS): the blocks below them are not scored"
    )
