"""Which finished generations an agent keeps in memory, for clients that re-attach.

A finished generation's event log is what `WatchGeneration` replays, so it is kept for
a while; but logs carry whole files, tool outputs (screenshots are hundreds of KB) and
the request's images, so keeping the last N of them let the agent grow by hundreds of
MB. Retention is therefore bounded three ways — count, approximate bytes and age since
finishing — and the oldest finished generation goes first whatever is still running:
a long generation never holds back the retirement of the ones that finished after it.
Running generations are never retired (their number is bounded by admission).

A retired generation is not lost: its run record stays in the run store, and
`WatchGeneration` replays that record's final state (see servicer.py).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from services.agent.domain import GenerationRequest
from services.agent.events import (
    CodeSnapshot,
    Event,
    GenerationComplete,
    GenerationError,
    Payload,
    Usage,
    VariantComplete,
    VariantCount,
    VariantError,
)
from services.agent.runstore import RunRecord

if TYPE_CHECKING:
    from services.agent.generation import Generation


@dataclass(frozen=True, slots=True)
class RetentionLimits:
    """0 turns a bound off."""

    max_count: int = 64
    max_bytes: int = 32 << 20
    max_age_s: float = 300.0


@dataclass(slots=True)
class _Kept:
    size: int
    finished: float  # time.monotonic()


def request_bytes(request: GenerationRequest) -> int:
    """The request's large parts: media data URLs, history text, the file being edited."""
    size = len(request.prompt.text) + sum(map(len, request.prompt.images))
    size += sum(map(len, request.prompt.videos)) + sum(map(len, request.option_codes))
    for message in request.history:
        size += len(message.text) + sum(map(len, message.images)) + sum(map(len, message.videos))
    if request.file_state is not None:
        size += len(request.file_state.content)
    return size


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


def retained_size(generation: Generation) -> int:
    """What keeping a finished generation costs: its log, request and final code."""
    codes = sum(len(v.code) for v in generation.variants)
    return generation.log.bytes + request_bytes(generation.request) + codes


def replay(record: RunRecord, after_sequence: int) -> list[Event]:
    """The events a client re-attaching to a retired generation gets: each variant's
    final code and outcome, and the generation's end, numbered on from `after_sequence`
    (the original numbering went with the log). Variants that did not finish get no
    event of their own, as in a live log; the final `GenerationComplete` says why."""
    payloads: list[tuple[int, Payload]] = [
        (0, VariantCount(len(record.variants), tuple(v.model for v in record.variants)))
    ]
    for variant in record.variants:
        if variant.code:
            payloads.append((variant.index, CodeSnapshot("", variant.code)))
        if variant.status == "completed":
            usage = Usage(variant.usage, variant.cost_usd, variant.priced)
            payloads.append((variant.index, VariantComplete(usage)))
        elif variant.status == "failed":
            payloads.append((variant.index, VariantError(variant.error)))
    if record.status == "failed":
        payloads.append((0, GenerationError(record.error)))
    payloads.append((0, GenerationComplete(record.status)))
    return [
        Event(record.generation_id, after_sequence + i, index, "", payload)
        for i, (index, payload) in enumerate(payloads, start=1)
    ]
