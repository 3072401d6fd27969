"""Which finished generations an agent keeps in memory, for clients that re-attach.

A finished generation's event log is what `WatchGeneration` replays, so it is kept for
a while; but logs carry whole files, tool outputs (screenshots are hundreds of KB) and
the request's images, so keeping the last N of them let the agent grow by hundreds of
MB. Retention is therefore bounded three ways — count, approximate bytes and age since
finishing — and the oldest finished generation goes first whatever is still running:
a long generation never holds back the retirement of the ones that finished after it.
Running generations are never retired (their number is bounded by admission).

The policy knows ids and sizes only; what it keeps and what a retired generation
leaves behind (its run record, which `WatchGeneration` replays) is the archive's
(archive.py).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetentionLimits:
    """0 turns a bound off (the agent's come from its settings, `S2C_RETAIN_*`)."""

    max_count: int
    max_bytes: int
    max_age_s: float


@dataclass(slots=True)
class _Kept:
    size: int
    finished: float  # time.monotonic()


class Retention:
    """Finished generations in the order they finished, with their sizes; calls
    `retire(generation_id)` for each one that falls outside the limits."""

    def __init__(
        self,
        limits: RetentionLimits,
        retire: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limits = limits
        self._retire = retire
        self._clock = clock
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._bytes = 0
        self._timer: asyncio.TimerHandle | None = None

    @property
    def count(self) -> int:
        return len(self._kept)

    @property
    def bytes(self) -> int:
        return self._bytes

    def finished(self, generation_id: str, size: int) -> None:
        """A generation finished: keep it, and retire what no longer fits."""
        self._kept[generation_id] = _Kept(size, self._clock())
        self._bytes += size
        self.sweep()

    def sweep(self) -> None:
        limits = self._limits
        expired_before = self._clock() - limits.max_age_s
        while self._kept:
            oldest_id, oldest = next(iter(self._kept.items()))
            if not (
                (limits.max_count and len(self._kept) > limits.max_count)
                or (limits.max_bytes and self._bytes > limits.max_bytes)
                or (limits.max_age_s and oldest.finished <= expired_before)
            ):
                break
            del self._kept[oldest_id]
            self._bytes -= oldest.size
            self._retire(oldest_id)
        self._arm()

    def _arm(self) -> None:
        # One timer for the oldest's expiry, so an idle agent gives its memory back too.
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not (self._kept and self._limits.max_age_s):
            return
        oldest = next(iter(self._kept.values()))
        delay = max(0.0, oldest.finished + self._limits.max_age_s - self._clock())
        self._timer = asyncio.get_running_loop().call_later(delay, self.sweep)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
