"""What is left of a generation: its run record, and for a while its whole event log.

The archive is fed by the manager: each save of a running generation's record (at its
start, once its variants are known) and, when it finishes, the generation itself. It
keeps finished generations in memory for clients that re-attach, within the retention
limits (retention.py, `S2C_RETAIN_*`), and answers for the ones it no longer keeps from
the run store: a record (`GetGeneration`) or a replay of its final state
(`WatchGeneration`). Records never hold a key: `snapshot` redacts the request's and the
agent's own.

A retired generation is freed by reference counting, at once (the cycle collector runs a
full pass only every ~150 generations, and the agent's RSS swung by tens of MB while
retired logs waited for it). Two rules keep it so: a finished generation is never
cancelled (generation.py), and retiring drops the generation's task, whose
`CancelledError` would hold the frame holding the generation.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

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
from services.agent.generation import Generation
from services.agent.metrics import AgentMetrics
from services.agent.retention import Retention, RetentionLimits
from services.agent.runstore import RunRecord, RunStore, redact, redacted, redactor, request_summary
from services.agent.settings import AgentSettings


class Archive:
    def __init__(
        self, settings: AgentSettings, metrics: AgentMetrics, store: RunStore | None = None
    ) -> None:
        self._secrets = tuple(settings.credentials.secrets())
        self._metrics = metrics
        self._store = store
        self._kept: OrderedDict[str, Generation] = OrderedDict()
        limits = RetentionLimits(
            settings.retained_generations, settings.retained_bytes, settings.retained_seconds
        )
        self._retention = Retention(limits, self._retire)

    def get(self, generation_id: str) -> Generation | None:
        """A finished generation still kept in memory."""
        return self._kept.get(generation_id)

    def kept(self) -> list[Generation]:
        """The finished generations kept in memory, oldest first."""
        return list(self._kept.values())

    def snapshot(self, generation: Generation) -> RunRecord:
        return snapshot(generation, self._secrets)

    async def save(self, generation: Generation) -> bool:
        """Saves the record as it stands; whether it was saved. Never fails the
        generation: the store reports failures (health, metric, the cause logged once,
        each lost final record logged)."""
        if self._store is None:
            return True
        try:
            await self._store.save(self.snapshot(generation))
        except Exception:
            return False
        return True

    async def finished(self, generation: Generation) -> None:
        """Takes a generation that just finished: kept in memory from now on (at once,
        so no lookup misses it), then its final record saved — shielded inside the store,
        so a cancelled generation still closes its record."""
        self._kept[generation.id] = generation
        self._retention.finished(generation.id, retained_size(generation))
        self._gauge()
        await self.save(generation)

    async def stored(self, generation_id: str) -> RunRecord | None:
        """The record the run store holds (for a generation no longer in memory)."""
        return await self._store.get(generation_id) if self._store is not None else None

    def close(self) -> None:
        self._retention.close()

    def _retire(self, generation_id: str) -> None:
        # Its record stays in the store, and WatchGeneration replays that.
        generation = self._kept.pop(generation_id, None)
        if generation is not None:
            # A cancelled task keeps its CancelledError, whose traceback holds the frame
            # holding this generation: a cycle that only a full collection would free
            # (one per ~150 generations), so every retired log waited for it.
            generation.task = None
        self._gauge()

    def _gauge(self) -> None:
        self._metrics.retained_generations.set(self._retention.count)
        self._metrics.retained_bytes.set(self._retention.bytes)


def snapshot(generation: Generation, secrets: Iterable[str] = ()) -> RunRecord:
    """The record of `generation` as it stands. Pass the service's own keys as
    `secrets` (the request's keys are redacted anyway)."""
    keys = redactor([*generation.request.credentials.secrets(), *secrets])
    return RunRecord(
        generation_id=generation.id,
        status=generation.status,
        started_at=generation.started_at,
        finished_at=generation.finished_at,
        error=redact(generation.error, keys),
        request=request_summary(generation.request, keys),
        variants=tuple(redacted(v, keys) for v in generation.variants),
    )


def retained_size(generation: Generation) -> int:
    """What keeping a finished generation costs: its log, request and final code."""
    codes = sum(len(v.code) for v in generation.variants)
    return generation.log.bytes + request_bytes(generation.request) + codes


def request_bytes(request: GenerationRequest) -> int:
    """The request's large parts: media data URLs, history text, the file being edited."""
    size = len(request.prompt.text) + sum(map(len, request.prompt.images))
    size += sum(map(len, request.prompt.videos)) + sum(map(len, request.option_codes))
    for message in request.history:
        size += len(message.text) + sum(map(len, message.images)) + sum(map(len, message.videos))
    if request.file_state is not None:
        size += len(request.file_state.content)
    return size


def replay(record: RunRecord, after_sequence: int) -> list[Event]:
    """The events a client re-attaching to a retired generation gets: each variant's
    final code and outcome, and the generation's end, numbered on from `after_sequence`
    (the original numbering went with the log). Variants that did not finish get no
    event of their own, as in a live log; the final `GenerationComplete` says why."""
    payloads: list[tuple[int, Payload]] = [
        (0, VariantCount(len(record.variants), tuple(v.model for v in record.variants)))
    ]
    for variant in record.variants:
        # The entry page first, so a client that takes the first page written as the entry
        # (one without an index.html) takes the right one; then the project's other files.
        entry = variant.files[0].path if variant.files else ""
        if variant.code:
            payloads.append((variant.index, CodeSnapshot(entry, variant.code)))
        for file in variant.files[1:]:
            payloads.append((variant.index, CodeSnapshot(file.path, file.content)))
        if variant.status == "completed":
            usage = Usage(variant.usage, variant.cost_usd, variant.priced)
            payloads.append((variant.index, VariantComplete(usage)))
            payloads.extend((variant.index, f) for f in variant.fidelity)
            payloads.extend((variant.index, a) for a in variant.accessibility)
        elif variant.status == "failed":
            payloads.append((variant.index, VariantError(variant.error)))
    if record.status == "failed":
        payloads.append((0, GenerationError(record.error)))
    payloads.append((0, GenerationComplete(record.status)))
    return [
        Event(record.generation_id, after_sequence + i, index, "", payload)
        for i, (index, payload) in enumerate(payloads, start=1)
    ]
