"""When a score's work must end: its limit passed, or its caller went away.

The scoring code runs in a worker thread, which nothing outside can interrupt. It checks
a `Stop` between steps small enough (one text comparison, one poll of Tesseract) that the
work ends within a few milliseconds of the limit, and the caller waits for that before it
frees the scorer's slot: a score past its limit costs no CPU and holds no slot.
"""

from __future__ import annotations

import math
import threading
import time


class Stopped(Exception):
    """The score ended early: its limit passed or its caller cancelled it."""


class Stop:
    """Set by the caller (cancellation) or reached by the clock (`deadline`, monotonic)."""

    __slots__ = ("_event", "deadline")

    def __init__(self, deadline: float = math.inf) -> None:
        self._event = threading.Event()
        self.deadline = deadline

    def set(self) -> None:
        self._event.set()

    @property
    def stopped(self) -> bool:
        return self._event.is_set() or time.monotonic() >= self.deadline

    def check(self) -> None:
        """Raises Stopped once the work must end."""
        if self.stopped:
            raise Stopped("the score's limit passed or its caller went away")
