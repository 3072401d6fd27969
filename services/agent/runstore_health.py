"""The run store as the agent uses it: every outcome observed, a failing disk survived.

`ObservedRunStore` wraps a backend (SQLite or PostgreSQL) so that

- each operation runs as its own task whose outcome is always retrieved and reported to a
  `StorageHealth` (metric, one log line per transition), even when the caller was
  cancelled meanwhile: a bare shielded future would fail unobserved ("Future exception
  was never retrieved") and the failure would be lost;
- a store that cannot be opened at start (a read-only or missing data directory, a
  database that is down) does not keep the agent from generating: it starts degraded and
  opens on a later save;
- while failing, the newest record that could not be saved is retried every
  `retry_s`, so health recovers (and that record lands) once the disk is writable again,
  without waiting for the next generation;
- a record whose latest save failed is never answered from the store, where it is stale
  or missing: `get` raises `RecordNotSaved` instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from services.agent.runstore import RunRecord, RunStore
from services.common.storage import StorageHealth, describe

log = logging.getLogger(__name__)

T = TypeVar("T")

STORE_NAME = "runs"
# The gRPC health service name that reports the run store (the agent's "" and
# AgentService entries stay SERVING: generations still run without it).
HEALTH_SERVICE = "s2c.agent.v1.RunStore"
DEFAULT_RETRY_S = 10.0
MAX_UNSAVED_IDS = 4096  # ids only; the oldest are forgotten first


class StoreUnavailable(Exception):
    """The run store could not answer."""


class RecordNotSaved(StoreUnavailable):
    pass


class ObservedRunStore:
    def __init__(
        self, inner: RunStore, health: StorageHealth, *, retry_s: float = DEFAULT_RETRY_S
    ) -> None:
        self.inner = inner
        self.health = health
        self._retry_s = retry_s
        self._opened = False
        self._open_lock = asyncio.Lock()
        self._unsaved: OrderedDict[str, None] = OrderedDict()
        self._retry: RunRecord | None = None
        self._tasks: set[asyncio.Future[Any]] = set()

    async def open(self) -> int:
        """Opens the backend; on failure starts degraded (0 runs closed) rather than
        refusing to start."""
        try:
            return await self._observed("open", self._open())
        except Exception:
            return 0

    async def save(self, run: RunRecord) -> None:
        await self._observed("save", self._save(run), run)

    async def get(self, generation_id: str) -> RunRecord | None:
        if generation_id in self._unsaved:
            raise RecordNotSaved(
                f"the run record of generation {generation_id!r} could not be saved "
                "(the run store is failing); what is stored is out of date or missing"
            )
        return await self._observed("read", self._read(lambda: self.inner.get(generation_id)))

    async def close(self) -> None:
        if self._tasks:
            await asyncio.wait(self._tasks)
        await self.inner.close()
        self._opened = False

    def unsaved(self, generation_id: str) -> bool:
        """Whether the latest save of this generation's record failed."""
        return generation_id in self._unsaved

    async def retry_while_failing(self) -> None:
        """Runs until cancelled: while failing, retries the newest unsaved record (or the
        open) every `retry_s`."""
        while True:
            await self.health.wait_change(True)
            while not self.health.ok:
                await asyncio.sleep(self._retry_s)
                run = self._retry
                try:
                    if run is not None:
                        await self.save(run)
                    else:
                        await self._observed("open", self._open())
                except Exception:
                    pass  # observed and counted already; retried on the next round

    # ------------------------------------------------------------------ internals

    async def _open(self) -> int:
        async with self._open_lock:
            if self._opened:
                return 0
            closed = await self.inner.open()
            self._opened = True
            if closed:
                log.warning("runs interrupted by a previous stop", extra={"count": closed})
            return closed

    async def _save(self, run: RunRecord) -> None:
        await self._open()
        await self.inner.save(run)

    async def _read(self, op: Callable[[], Awaitable[T]]) -> T:
        await self._open()
        return await op()

    async def _observed(self, op: str, work: Awaitable[T], run: RunRecord | None = None) -> T:
        task: asyncio.Task[T] = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._settle(op, done, run))
        # Shielded: the caller may be cancelled (a generation's final save runs in a
        # `finally`), the write and its bookkeeping still complete.
        try:
            return await asyncio.shield(task)
        except StoreUnavailable:
            raise
        except Exception as exc:
            raise StoreUnavailable(f"the run store failed ({op}): {describe(exc)}") from exc

    def _settle(self, op: str, task: asyncio.Task[T], run: RunRecord | None) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()  # retrieved here, whoever awaited it
        if exc is None:
            if op != "read":  # a read that works says nothing about writes
                self.health.succeeded()
            if run is not None:
                self._unsaved.pop(run.generation_id, None)
                if self._retry is not None and self._retry.generation_id == run.generation_id:
                    self._retry = None
            return
        self.health.failed(op, exc)
        if run is not None and run.status != "running":
            # Logged here, not by the generation: its task is often cancelled by then
            # (the last client left), while this save still ran to its end.
            log.warning(
                "run record not saved",
                extra={"generation_id": run.generation_id, "error": describe(exc)},
            )
        if run is not None:
            self._unsaved[run.generation_id] = None
            self._unsaved.move_to_end(run.generation_id)
            while len(self._unsaved) > MAX_UNSAVED_IDS:
                self._unsaved.popitem(last=False)
            self._retry = run
