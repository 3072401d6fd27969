"""What each variant of an `s2c generate` run cost: its tokens and dollars, as text and JSON.

The agent's `usage` events are per model turn and `variant_complete` carries the
variant's totals, so a variant's usage is the sum of its turns until it completes, and
the agent's own totals after. `input_tokens` counts input not served from a prompt
cache; `cached_tokens` the input that was (the proto's `cache_read_tokens`). A model the
agent has no price for is "unpriced" (`cost_usd: null`, `priced: false`), never $0.
"""

from __future__ import annotations

from typing import Any

from s2c.common.v1 import common_pb2


def add_turn(total: common_pb2.Usage, turn: common_pb2.Usage) -> None:
    """Adds one `usage` event (that turn's alone, cost included) to a running total."""
    total.input_tokens += turn.input_tokens
    total.output_tokens += turn.output_tokens
    total.cache_read_tokens += turn.cache_read_tokens
    total.cache_write_tokens += turn.cache_write_tokens
    total.total_tokens += turn.total_tokens
    total.cost_usd += turn.cost_usd
    # A variant keeps one model, so every turn says the same; the latest is as good.
    total.priced = turn.priced


def tokens_text(usage: common_pb2.Usage | None) -> str:
    """`1,200 in + 3,400 cached / 500 out`; "–" before the first turn ended."""
    if usage is None:
        return "–"
    cached = usage.cache_read_tokens
    written = usage.cache_write_tokens
    text = f"{usage.input_tokens:,} in"
    if cached:
        text += f" + {cached:,} cached"
    if written:
        text += f" + {written:,} cache write"
    return f"{text} / {usage.output_tokens:,} out"


def cost_text(usage: common_pb2.Usage | None) -> str:
    """`$0.0123`, "unpriced" for a model without a price, "–" before the first turn."""
    if usage is None:
        return "–"
    if not usage.priced:
        return "unpriced"
    if 0 < usage.cost_usd < 0.0001:
        return "<$0.0001"  # it did cost something: "$0.0000" would say otherwise
    return f"${usage.cost_usd:.4f}"


def usage_json(usage: common_pb2.Usage | None) -> dict[str, Any] | None:
    """The `--json` summary's per-variant usage object; None before the first turn."""
    if usage is None:
        return None
    return {
        "input_tokens": usage.input_tokens,
        "cached_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": usage.cost_usd if usage.priced else None,
        "priced": usage.priced,
    }
