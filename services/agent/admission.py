"""Admission control: a bound on the variants running in one agent process.

Past the bound a new generation is refused at once (the servicer answers
RESOURCE_EXHAUSTED, the gateway tries another agent, then tells the browser to retry)
instead of being admitted into a saturated event loop, where every running generation
would slow down and some would time out with nothing to show.
"""

from __future__ import annotations

from collections.abc import Callable


class Busy(Exception):
    """This agent already runs as many variants as it may."""


class Admission:
    def __init__(self, limit: int) -> None:
        self.limit = limit  # 0: no bound
        self.running = 0

    def admit(self, wanted: int) -> Callable[[], None]:
        """Takes `wanted` places, or raises Busy; returns the (idempotent) release. One
        generation alone is always admitted, however many variants it has."""
        if self.limit and self.running and self.running + wanted > self.limit:
            raise Busy(
                f"{self.running} of at most {self.limit} variants are running on this "
                f"agent and this generation needs {wanted}"
            )
        self.running += wanted
        held = [wanted]

        def release() -> None:
            self.running -= held[0]
            held[0] = 0

        return release
