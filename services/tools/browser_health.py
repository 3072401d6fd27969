"""Whether this worker's browser launches: `screenshot_preview` and URL capture need it.

A worker whose Chromium does not launch (a library missing from the image, a wrong
`S2C_CHROMIUM_PATH`) still runs every other tool, so its gRPC health "" stays SERVING; it
says so where an operator looks instead:

- the gRPC health service `s2c.tools.v1.Browser`: UNKNOWN until the first launch, then
  SERVING or NOT_SERVING;
- the metrics `s2c_browser_healthy` (1 or 0) and `s2c_browser_launch_failures_total`;
- `ListTools`' `unavailable` map, which the agent passes on to the variant's status line
  and to `GetCapabilities` (so the gateway's `/healthz` and `/api/capabilities`);
- one log line per transition, the launch error with it.

Every launch reports here (the first one starts with the worker; a browser that dies is
relaunched on use). While the browser is down, `watch` tries again every `retry_s`, so
health recovers on its own when the cause passes (memory, `/dev/shm`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from services.common.storage import describe
from services.tools.metrics import ToolsMetrics

log = logging.getLogger(__name__)

HEALTH_SERVICE = "s2c.tools.v1.Browser"
# The tools that need the browser (URL capture is an RPC of its own, not a tool).
BROWSER_TOOLS = ("screenshot_preview",)


class BrowserHealth:
    def __init__(self, chromium_path: str, metrics: ToolsMetrics) -> None:
        self._chromium_path = chromium_path
        self._metrics = metrics
        self._ok: bool | None = None  # None: no launch has finished yet
        self._changed = asyncio.Event()

    @property
    def ok(self) -> bool | None:
        return self._ok

    @property
    def reason(self) -> str:
        """Why the browser tools are unavailable, in words fit for a client (the launch
        error itself, which may name the machine's files, stays in the log)."""
        return (
            f"Chromium ({self._chromium_path}) did not launch on the tool worker; "
            "its log has the cause"
        )

    def unavailable(self) -> dict[str, str]:
        """The browser tools this worker cannot run now, each with the reason."""
        if self._ok is not False:
            return {}
        return dict.fromkeys(BROWSER_TOOLS, self.reason)

    def launched(self, error: BaseException | None) -> None:
        """The outcome of one launch (the Screenshotter's `on_launch`)."""
        ok = error is None
        if error is not None:
            self._metrics.browser_launch_failures.inc()
        self._metrics.browser_healthy.set(1 if ok else 0)
        if ok == self._ok:
            return
        if error is not None:
            log.error(
                "browser unavailable: screenshot_preview and URL capture are off",
                extra={"chromium_path": self._chromium_path, "cause": describe(error)},
            )
        elif self._ok is False:
            log.warning("browser launched again: screenshot_preview is back")
        self._ok = ok
        # Wake every waiter, then arm a fresh event for the next change.
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_change(self, ok: bool | None) -> bool | None:
        """Waits until health differs from `ok`; returns the new value."""
        while self._ok == ok:
            await self._changed.wait()
        return self._ok

    async def watch(self, probe: Callable[[], Awaitable[bool]], retry_s: float) -> None:
        """Launches the browser through `probe` now, and again `retry_s` after each failure
        (`Screenshotter.probe`, which launches again once its last failure is that old).
        Runs until cancelled."""
        while True:
            await probe()
            if self._ok is not False:
                # Up: nothing to do until a relaunch fails.
                await self.wait_change(self._ok)
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(retry_s):
                    await self.wait_change(False)  # or a capture's relaunch mends it first
