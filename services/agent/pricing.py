"""Token usage and the price table (USD per million tokens)."""

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


PRICES: dict[str, Price] = {
    "gpt-5.4-mini": Price(0.40, 3.20, 0.10, 0.0),
    "gpt-5.4-2026-03-05": Price(2.50, 15.00, 0.25, 0.0),
    "gpt-5.5": Price(2.50, 15.00, 0.25, 0.0),
    "gpt-5.6-sol": Price(2.50, 15.00, 0.25, 0.0),
    "gpt-5.6-terra": Price(2.50, 15.00, 0.25, 0.0),
    "claude-sonnet-4-6": Price(3.00, 15.00, 0.30, 3.75),
    "claude-opus-4-8": Price(5.00, 25.00, 0.50, 6.25),
    "claude-fable-5": Price(10.00, 50.00, 1.00, 12.50),
    "gemini-3-flash-preview": Price(0.50, 3.00, 0.05, 0.0),
    "gemini-3-pro-preview": Price(2.00, 12.00, 0.20, 0.0),
    "gemini-3.1-pro-preview": Price(2.00, 12.00, 0.20, 0.0),
    "gemini-3.5-flash": Price(0.50, 3.00, 0.05, 0.0),
}


def is_priced(provider: str, api_name: str) -> bool:
    """Whether a cost from `cost_usd` is the model's cost. The demo model never has
    one, whatever it is called; anything else has one when the table names it."""
    return provider != "demo" and api_name in PRICES


def cost_usd(api_name: str, usage: Usage) -> float:
    """Cost of `usage` on the model `api_name`; 0.0 for models we have no price for
    (local OpenAI-compatible servers, the demo model)."""
    price = PRICES.get(api_name)
    if price is None:
        return 0.0
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1e6
