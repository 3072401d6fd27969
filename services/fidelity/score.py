"""One score of a rendered page against a screenshot: the entry point both `s2c eval` (a
PNG reference) and the tool workers' live fidelity score call.

The reference's blocks come from OCR (`ocr.ocr_page`, done once per screenshot and reused
for every candidate), the candidate's from its DOM words, both grouped by
`lines.group_words`; then the metrics of `metrics.py` apply unchanged.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from services.fidelity.lines import Word, group_words
from services.fidelity.metrics import PageBlocks, Scores, block_scores, match_blocks, visual_score
from services.fidelity.ocr import OcrPage


@dataclass(frozen=True, slots=True)
class PngScore:
    """The scores and what they were computed from (the worst regions read it)."""

    scores: Scores
    reference: PageBlocks
    candidate: PageBlocks
    pairs: tuple[tuple[int, int, float], ...]


def png_size(png: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(png)) as image:
        return image.size


def candidate_blocks(words: Sequence[Word], png: bytes) -> PageBlocks:
    """The candidate's DOM words as blocks, on the page its screenshot shows."""
    width, height = png_size(png)
    return group_words(list(words), float(width), float(height))


def score_png(reference: OcrPage, ref_png: bytes, words: Sequence[Word], png: bytes) -> PngScore:
    """All five metrics of a rendered page (its DOM words and screenshot) against a
    screenshot read by OCR."""
    candidate = candidate_blocks(words, png)
    scores = Scores(*block_scores(reference.page, candidate), visual_score(ref_png, png))
    pairs = tuple(match_blocks(reference.page, candidate))
    return PngScore(scores, reference.page, candidate, pairs)
