"""A service that cannot bind its address: the error and the exit status, shared by the
servers that raise it and the command line that reports it (a leaf: imports nothing)."""

from __future__ import annotations

# The exit status of a service that cannot bind its address: retrying will not free the
# port, so `s2c up` gives up on such a child at once (sysexits' EX_CONFIG).
EXIT_CANNOT_LISTEN = 78


class ListenError(Exception):
    """A server could not bind its address; the message says which and why. `metrics`:
    the address was the /metrics one, so the command line can name the setting to change."""

    def __init__(self, message: str, *, metrics: bool = False) -> None:
        super().__init__(message)
        self.metrics = metrics
