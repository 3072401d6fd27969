"""Storage health: whether a service's durable store is taking writes, and why not.

One `StorageHealth` per store (the agent's run store, the gateway's design systems). The
store reports each write's outcome; health endpoints, metrics and logs read it. It turns
failing on the first failed operation and ok again on the next successful write, so a
directory that becomes writable again needs no restart. Only a transition is logged,
with its cause: a broken disk under load would otherwise log once per request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge

log = logging.getLogger(__name__)

MAX_CAUSE_CHARS = 300


class StorageMetrics:
    """`s2c_storage_errors_total{store,op}` and `s2c_storage_healthy{store}`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.errors = Counter(
            "s2c_storage_errors_total",
            "Failed storage operations, by store and operation",
            ["store", "op"],
            registry=registry,
        )
        self.healthy = Gauge(
            "s2c_storage_healthy",
            "1 while the store takes writes, 0 after a failed operation until the next success",
            ["store"],
            registry=registry,
        )


@dataclass(frozen=True, slots=True)
class StorageState:
    ok: bool
    cause: str = ""  # the last failure, e.g. "OSError: [Errno 30] Read-only file system"
    op: str = ""  # the operation that failed: open, read, write, save
    since: float = 0.0  # time.time() of the transition


def describe(exc: BaseException) -> str:
    """A one-line cause: the exception's type and message, clipped."""
    text = " ".join(str(exc).split()) or "no detail"
    cause = f"{type(exc).__name__}: {text}"
    return cause if len(cause) <= MAX_CAUSE_CHARS else cause[: MAX_CAUSE_CHARS - 1] + "…"


class StorageHealth:
    def __init__(self, store: str, metrics: StorageMetrics | None = None) -> None:
        self.store = store
        self._metrics = metrics
        self._state = StorageState(ok=True, since=time.time())
        self._changed = asyncio.Event()
        if metrics is not None:
            metrics.healthy.labels(store).set(1)

    @property
    def state(self) -> StorageState:
        return self._state

    @property
    def ok(self) -> bool:
        return self._state.ok

    def failed(self, op: str, exc: BaseException) -> None:
        if self._metrics is not None:
            self._metrics.errors.labels(self.store, op).inc()
        cause = describe(exc)
        was_ok = self._state.ok
        since = time.time() if was_ok else self._state.since
        self._state = StorageState(ok=False, cause=cause, op=op, since=since)
        if was_ok:
            log.error(
                "storage failing",
                extra={"store": self.store, "op": op, "cause": cause},
                exc_info=exc,
            )
            self._transition(False)

    def succeeded(self) -> None:
        if self._state.ok:
            return
        log.warning(
            "storage recovered",
            extra={"store": self.store, "failing_since": round(self._state.since, 3)},
        )
        self._state = StorageState(ok=True, since=time.time())
        self._transition(True)

    async def wait_change(self, ok: bool) -> bool:
        """Waits until health differs from `ok`; returns the new value."""
        while self._state.ok == ok:
            await self._changed.wait()
        return self._state.ok

    def _transition(self, ok: bool) -> None:
        if self._metrics is not None:
            self._metrics.healthy.labels(self.store).set(1 if ok else 0)
        # Wake every waiter, then arm a fresh event for the next change.
        self._changed.set()
        self._changed = asyncio.Event()

    def to_json(self) -> dict[str, object]:
        state = self._state
        if state.ok:
            return {"ok": True}
        return {"ok": False, "op": state.op, "error": state.cause, "since": round(state.since, 3)}
