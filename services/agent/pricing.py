"""Token usage and what it costs (prices in USD per million tokens).

The prices themselves are the provider registry's (providers/registry.py): each catalogue
model family carries its own, so a new provider's prices are part of its one entry.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one turn or accumulated. `input_tokens` excludes cached input."""

    input_tokens: int = 0
    output_tokens: int = 0  # reasoning included
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.total_tokens + other.total_tokens,
        )

    @classmethod
    def cached_within(cls, prompt: int, cached: int | None, output: int, total: int) -> Usage:
        """From counts whose prompt tokens include the cached ones (OpenAI, Gemini)."""
        cached = cached or 0
        return cls(prompt - cached, output, cached, 0, total)


@dataclass(frozen=True, slots=True)
class Price:
    input: float
    output: float
    cache_read: float
    cache_write: float


def cost_usd(price: Price | None, usage: Usage) -> float:
    """Cost of `usage` at `price` (its model's, from the provider registry); 0.0 for a
    model without one (local OpenAI-compatible servers, the demo model): such a model is
    "unpriced", which clients show as such rather than as $0."""
    if price is None:
        return 0.0
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1e6
