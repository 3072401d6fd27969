"""Places in the workers' browser, shared fairly between the clients that render in it.

A render holds its place while its page loads, and a client's page can make that take
as long as the load limit (a stylesheet that never answers). With one queue for all,
two such pages of one client held both places and every other client's previews timed
out behind them (issue 35). So each owner (a generation, named by the agent) has its own
bound, the places are shared up to a total, and a freed place goes to the waiting owner
that holds the fewest: a newcomer starts before a busy owner's next render.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field


@dataclass(eq=False)
class _Waiter:
    owner: str
    granted: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class FairSlots:
    """At most `total` holders at once, at most `per_owner` of them one owner's."""

    def __init__(self, total: int, per_owner: int) -> None:
        self.total = max(1, total)
        self.per_owner = max(1, min(per_owner, self.total))
        self._held: Counter[str] = Counter()
        self._waiting: list[_Waiter] = []

    def held(self, owner: str) -> int:
        return self._held[owner]

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @contextlib.asynccontextmanager
    async def hold(self, owner: str) -> AsyncIterator[None]:
        """A place for `owner` for the block; waits its turn (cancellable)."""
        waiter = _Waiter(owner)
        self._waiting.append(waiter)
        self._grant()
        try:
            await waiter.granted
        except asyncio.CancelledError:
            if waiter in self._waiting:
                self._waiting.remove(waiter)
            else:
                self._release(owner)  # granted just as it was cancelled: pass it on
            raise
        try:
            yield
        finally:
            self._release(owner)

    def _release(self, owner: str) -> None:
        self._held[owner] -= 1
        if self._held[owner] <= 0:
            del self._held[owner]
        self._grant()

    def _grant(self) -> None:
        while self._held.total() < self.total:
            ready = [w for w in self._waiting if self._held[w.owner] < self.per_owner]
            if not ready:
                return
            # Fewest places held first; among equals, the longest waiting (list order).
            chosen = min(ready, key=lambda w: self._held[w.owner])
            self._waiting.remove(chosen)
            self._held[chosen.owner] += 1
            chosen.granted.set_result(None)
