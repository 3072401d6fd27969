"""What the fidelity scorer keeps between scores (docs/fidelity.md, "Cost"): a score is
cheap enough for every round only if nothing is done twice.

* A screenshot's reading (decoded under the image budget, then OCR) is kept per image
  hash: every option and every round of a generation scores against the same screenshot,
  so it is decoded and read once, not once per score.
* A score is kept per (page hash, image hash, width, with regions): identical pages (the
  options of one generation often are; a round that changed nothing) are rendered and
  scored once.

Both are bounded (least recently used out) and compute each key once at a time: callers
asking for a key being computed wait for it; if that computation fails, is refused or is
cancelled, the next caller computes it again.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")

# Readings hold the screenshot as PNG and its words: a few MB at most each.
MAX_READINGS = 16
# Scores are small (five numbers), or a comparison image (tens of KB) with regions.
MAX_SCORES = 256


class KeptResults(Generic[V]):
    def __init__(self, max_entries: int) -> None:
        self._max_entries = max_entries
        self._done: OrderedDict[Hashable, V] = OrderedDict()
        self._pending: dict[Hashable, asyncio.Event] = {}

    def __len__(self) -> int:
        return len(self._done)

    async def get(
        self, key: Hashable, compute: Callable[[], Awaitable[V]], keep: Callable[[V], bool]
    ) -> V:
        """The kept result of `key`, or `compute()`'s, kept when `keep` says so (a failed
        render is not: the next score tries again)."""
        while True:
            if key in self._done:
                self._done.move_to_end(key)
                return self._done[key]
            pending = self._pending.get(key)
            if pending is None:
                break
            await pending.wait()
        done = self._pending[key] = asyncio.Event()
        try:
            value = await compute()
            if keep(value):
                self._done[key] = value
                if len(self._done) > self._max_entries:
                    self._done.popitem(last=False)
            return value
        finally:
            del self._pending[key]
            done.set()
