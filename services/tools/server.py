"""Bootstrap of a tool worker process."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from wsgiref.simple_server import WSGIServer

import grpc
from s2c.tools.v1 import tool_service_pb2 as pb
from s2c.tools.v1 import tool_service_pb2_grpc as pb_grpc

from services.common.grpc_server import (
    RunningServer,
    serve_until_signalled,
    split_host_port,
    start_server,
)
from services.common.metrics import serve_metrics
from services.tools.servicer import ToolServicer
from services.tools.settings import ToolsSettings
from services.tools.worker import ToolWorker

log = logging.getLogger(__name__)


class ToolsServer:
    def __init__(self, settings: ToolsSettings) -> None:
        self.settings = settings
        self.worker = ToolWorker(settings)
        self.running: RunningServer | None = None
        self._metrics_server: WSGIServer | None = None

    @property
    def port(self) -> int:
        assert self.running is not None
        return self.running.port

    async def start(self) -> None:
        servicer = ToolServicer(self.worker)

        def register(server: grpc.aio.Server) -> Sequence[str]:
            pb_grpc.add_ToolServiceServicer_to_server(servicer, server)
            return [pb.DESCRIPTOR.services_by_name["ToolService"].full_name]

        self.running = await start_server(
            self.settings.listen, register, self.settings.grpc_security
        )
        if self.settings.metrics_listen:
            host, port = split_host_port(self.settings.metrics_listen)
            self._metrics_server, _ = serve_metrics(self.worker.metrics.registry, host, port)
        log.info("tools listening", extra={"port": self.running.port})

    async def stop(self, grace_s: float = 1.0) -> None:
        if self.running is not None:
            await self.running.stop(grace_s)
        await self._close()

    async def _close(self) -> None:
        await self.worker.close()
        if self._metrics_server is not None:
            self._metrics_server.shutdown()

    async def serve(self) -> None:
        await self.start()
        assert self.running is not None
        await serve_until_signalled(self.running, self.settings.shutdown_grace_s)
        await self._close()
