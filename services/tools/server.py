"""Bootstrap of a tool worker process."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextlib import AsyncExitStack

import grpc
from grpc_health.v1 import health, health_pb2
from s2c.tools.v1 import tool_service_pb2 as pb
from s2c.tools.v1 import tool_service_pb2_grpc as pb_grpc

from services.common.grpc_server import (
    GrpcService,
    max_connection_age_options,
    open_metrics_port,
    start_server,
)
from services.tools.browser_health import HEALTH_SERVICE, BrowserHealth
from services.tools.servicer import ToolServicer
from services.tools.settings import ToolsSettings
from services.tools.worker import ToolWorker

log = logging.getLogger(__name__)


class ToolsServer(GrpcService):
    def __init__(self, settings: ToolsSettings) -> None:
        # Callers stopping it directly (the test suite) want a short grace; a signal gets
        # the configured one.
        super().__init__(settings.shutdown_grace_s, stop_grace_s=1.0)
        self.settings = settings
        self.worker = ToolWorker(settings)

    async def start(self) -> None:
        servicer = ToolServicer(self.worker)

        def register(server: grpc.aio.Server) -> Sequence[str]:
            pb_grpc.add_ToolServiceServicer_to_server(servicer, server)
            return [pb.DESCRIPTOR.services_by_name["ToolService"].full_name]

        # What opens here closes again if a later step fails; then the server owns it.
        async with AsyncExitStack() as opening:
            opening.push_async_callback(self.worker.close)
            open_metrics_port(opening, self.worker.metrics.registry, self.settings.metrics_listen)
            resources = opening.pop_all()
        settings = self.settings
        self.running = await start_server(
            settings.listen,
            register,
            settings.grpc_security,
            resources=resources,
            options=max_connection_age_options(
                settings.max_connection_age_s, settings.max_connection_age_grace_s
            ),
        )
        browser, shooter = self.worker.browser, self.worker.screenshotter
        if browser is not None and shooter is not None:
            servicer_health = self.running.health
            await servicer_health.set(HEALTH_SERVICE, _STATUS[None])
            tasks = [
                asyncio.create_task(browser.watch(shooter.probe, shooter.settings.probe_retry_s)),
                asyncio.create_task(_publish(browser, servicer_health)),
            ]
            # Before the worker closes the browser (resources close in reverse order).
            self.running.resources.push_async_callback(_cancelled, tasks)
        log.info("tools listening", extra={"port": self.running.port})


_SERVING = health_pb2.HealthCheckResponse
_STATUS = {None: _SERVING.UNKNOWN, True: _SERVING.SERVING, False: _SERVING.NOT_SERVING}


async def _publish(browser: BrowserHealth, servicer: health.aio.HealthServicer) -> None:
    ok = browser.ok
    while True:
        await servicer.set(HEALTH_SERVICE, _STATUS[ok])
        ok = await browser.wait_change(ok)


async def _cancelled(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    # return_exceptions: a background task's own failure is retrieved, not lost.
    for outcome in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(outcome, Exception):
            log.error("browser health task failed", exc_info=outcome)
