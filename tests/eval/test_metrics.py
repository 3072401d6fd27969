"""The block metrics on hand-made blocks (no browser): pairing, thresholds, formulas."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from services.fidelity.metrics import (
    MATCH_THRESHOLD,
    Block,
    PageBlocks,
    block_scores,
    match_blocks,
    score,
    visual_score,
)


def block(text: str, x: float = 0, y: float = 0, color: tuple[int, int, int] = (0, 0, 0)) -> Block:
    return Block(text, x, y, 100, 20, color)


def page(*blocks: Block) -> PageBlocks:
    return PageBlocks(tuple(blocks), 1000, 1000)


def png(color: tuple[int, int, int], size: tuple[int, int] = (200, 300)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, "PNG")
    return buffer.getvalue()


def test_identical_blocks_score_one_on_every_block_metric() -> None:
    p = page(block("Pricing", 10, 10), block("Sign in", 500, 10), block("Hello", 10, 300))
    assert block_scores(p, p) == pytest.approx((1.0, 1.0, 1.0, 1.0))


def test_duplicate_texts_pair_by_position() -> None:
    ref = page(
        block("Learn more", 0, 100), block("Learn more", 0, 500), block("Learn more", 0, 900)
    )
    cand = page(*reversed(ref.blocks))
    pairs = match_blocks(ref, cand)
    assert sorted((r, c) for r, c, _ in pairs) == [(0, 2), (1, 1), (2, 0)]
    assert block_scores(ref, cand)[2] == pytest.approx(1.0)


def test_blocks_less_alike_than_the_threshold_are_not_matched() -> None:
    ref = page(block("Fresh bread every morning"))
    cand = page(block("Contact our sales team"))
    assert match_blocks(ref, cand) == []
    assert block_scores(ref, cand) == (0.0, 0.0, 0.0, 0.0)
    assert MATCH_THRESHOLD == 0.5


def test_block_match_is_the_matched_share_of_both_pages_text_area() -> None:
    ref = page(block("one"), block("two", 0, 100), block("three", 0, 200), block("four", 0, 300))
    cand = page(*ref.blocks[:3])
    # Matched area: 3 blocks on each side; total: 4 + 3 blocks of the same size.
    assert block_scores(ref, cand)[0] == pytest.approx(6 / 7)


def test_position_is_one_minus_the_larger_normalised_offset() -> None:
    ref = page(block("Title", 0, 0))
    cand = page(block("Title", 250, 100))
    assert block_scores(ref, cand)[2] == pytest.approx(0.75)


def test_color_is_one_minus_ciede2000_over_100() -> None:
    ref = page(block("Title", color=(0, 0, 0)))
    cand = page(block("Title", color=(255, 0, 0)))
    # CIEDE2000(black, pure red) is 50.4 units.
    assert block_scores(ref, cand)[3] == pytest.approx(1 - 0.5041, abs=1e-3)


def test_two_pages_without_text_agree_and_one_without_scores_zero() -> None:
    assert block_scores(page(), page()) == (1.0, 1.0, 1.0, 1.0)
    assert block_scores(page(block("x")), page()) == (0.0, 0.0, 0.0, 0.0)


def test_visual_is_ssim_of_the_resized_grayscale_images() -> None:
    white, black = png((255, 255, 255)), png((0, 0, 0))
    assert visual_score(white, white) == pytest.approx(1.0)
    assert visual_score(white, black) < 0.01
    # Sizes differ: both are resized to the fixed size first.
    assert visual_score(white, png((255, 255, 255), (640, 2000))) == pytest.approx(1.0)


def test_a_png_reference_gets_only_the_visual_score() -> None:
    scores = score(None, png((10, 10, 10)), page(block("x")), png((10, 10, 10)))
    assert scores.as_dict() == {
        "block_match": None,
        "text": None,
        "position": None,
        "color": None,
        "visual": pytest.approx(1.0),
    }
