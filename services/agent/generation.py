"""One generation as it runs: its state, its event log and the streams that hold it.

A `Generation` owns an append-only event log (sequence numbers are 1-based and
gapless) that any number of watchers read at their own pace, so a client that
reconnects re-reads from where it stopped. The manager (manager.py) starts, cancels
and ends it; the runner (runner.py) fills it; the archive (archive.py) keeps it once
it finished.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence

from services.agent.domain import GenerationRequest, VariantRecord
from services.agent.eventlog import DEFAULT_TICK_S, CodePace, EventLog
from services.agent.events import Event, GenerationComplete, GenerationError, Payload, RunStatus

# What ended a cancelled generation, as its run record's `error` says it.
CANCELLED_BY_CLIENT = "Cancelled by a client (CancelGeneration)."
CANCELLED_AT_SHUTDOWN = "Cancelled: the agent shut down before the generation finished."


def abandoned(grace_s: float) -> str:
    return f"Cancelled: no client was attached for the {grace_s:g} s resume grace."


class Generation:
    def __init__(
        self,
        generation_id: str,
        request: GenerationRequest,
        *,
        tick_s: float = DEFAULT_TICK_S,
        pace: CodePace | None = None,
        resume_grace_s: float = 0.0,
    ) -> None:
        """`resume_grace_s`: how long it runs on once no stream holds it (see `release`)."""
        self.id = generation_id
        self.request = request
        self.status: RunStatus = "running"
        self.error = ""
        self.started_at = time.time()
        self.started_monotonic = time.monotonic()
        self.finished_at: float | None = None
        self.variants: list[VariantRecord] = []
        self.deadline = float("inf")  # time.monotonic() by which the work must end
        self.task: asyncio.Task[None] | None = None
        self.log = EventLog(
            generation_id, tick_s, pace=pace, code_batch_chars=request.code_batch_chars
        )
        # Why it was cancelled, in its run record's `error` ("" until someone cancels).
        self.cancelled_by = ""
        self._owners = 0
        self._resume_grace_s = resume_grace_s
        self._abandoned: asyncio.TimerHandle | None = None

    @property
    def finished(self) -> bool:
        return self.finished_at is not None

    @property
    def last_sequence(self) -> int:
        return len(self.log)

    def publish(self, variant_index: int, event_id: str, payload: Payload) -> None:
        if self.finished:
            return
        self.log.publish(variant_index, event_id, payload)
        if isinstance(payload, GenerationComplete):
            self.finished_at = time.time()
            if self._abandoned is not None:  # nothing left to cancel: let it go now
                self._abandoned.cancel()
                self._abandoned = None

    def fail(self, message: str) -> RunStatus:
        """Publishes the generation's failure; returns its status, "failed"."""
        self.error = message
        self.publish(0, "", GenerationError(message))
        return "failed"

    def batches(self, after_sequence: int = 0) -> AsyncIterator[Sequence[Event]]:
        """Events with sequence > after_sequence, as many at a time as are committed,
        live until the generation ends."""
        return self.log.batches(after_sequence)

    def cancel(self, reason: str = CANCELLED_BY_CLIENT) -> bool:
        """Stops the work now; `reason` is kept as what ended it."""
        # Once finished only the final save is left, and that is shielded: cancelling
        # would gain nothing and leave the task holding a CancelledError (archive.py).
        if self.task is None or self.task.done() or self.finished:
            return False
        self.cancelled_by = self.cancelled_by or reason
        return self.task.cancel()

    def acquire(self) -> None:
        """A client stream now depends on this generation (a re-attach within the resume
        grace keeps it running)."""
        self._owners += 1
        if self._abandoned is not None:
            self._abandoned.cancel()
            self._abandoned = None

    def release(self) -> None:
        """A client stream went away. Going away is not asking to cancel (its gateway may
        have restarted, its network dropped): with no stream left, the work runs on for
        the resume grace and is cancelled only if nobody re-attached by then, so nothing
        runs (and bills) for nobody for longer than that."""
        self._owners -= 1
        if self._owners > 0 or self.finished or self._abandoned is not None:
            return
        if self._resume_grace_s <= 0:
            self.cancel(abandoned(0))
            return
        self._abandoned = asyncio.get_running_loop().call_later(self._resume_grace_s, self._abandon)

    def _abandon(self) -> None:
        self._abandoned = None
        # Once every option has ended, what is left (the scores, within their own limit)
        # bills no model and is the run record's: a socket that closed as its options
        # completed (the upstream UI's, relay.py) leaves it to finish.
        options_ended = bool(self.variants) and all(v.status != "running" for v in self.variants)
        if self._owners <= 0 and not options_ended:
            self.cancel(abandoned(self._resume_grace_s))
