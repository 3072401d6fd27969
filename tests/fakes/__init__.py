"""Local fakes of the external APIs, each speaking its real wire format."""

from __future__ import annotations

from aiohttp import web


async def serve_on_loopback(
    app: web.Application, *, handler_cancellation: bool = False
) -> tuple[web.AppRunner, str]:
    """Serves `app` on 127.0.0.1 at a free port; returns the runner and `http://host:port`.

    `handler_cancellation` cancels a handler when its client goes away: the fakes that
    must notice disconnects (cancellation tests) turn it on.
    """
    runner = web.AppRunner(app, handler_cancellation=handler_cancellation, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}"
