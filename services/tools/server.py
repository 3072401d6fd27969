"""Bootstrap of a tool worker process."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import AsyncExitStack

import grpc
from s2c.tools.v1 import tool_service_pb2 as pb
from s2c.tools.v1 import tool_service_pb2_grpc as pb_grpc

from services.common.grpc_server import GrpcService, open_metrics_port, start_server
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
        self.running = await start_server(
            self.settings.listen, register, self.settings.grpc_security, resources=resources
        )
        log.info("tools listening", extra={"port": self.running.port})
