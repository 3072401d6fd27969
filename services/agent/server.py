"""Bootstrap of the agent service process."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from wsgiref.simple_server import WSGIServer

import grpc
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.agent.generation import GenerationManager
from services.agent.generation import SessionFactory as Sessions
from services.agent.providers.factory import SessionFactory
from services.agent.runstore import open_run_store
from services.agent.servicer import AgentServicer
from services.agent.settings import AgentSettings
from services.agent.tool_client import GrpcToolExecutor
from services.common.grpc_server import (
    RunningServer,
    serve_until_signalled,
    split_host_port,
    start_server,
)
from services.common.metrics import AgentMetrics, serve_metrics

log = logging.getLogger(__name__)


class AgentServer:
    """The agent service: its gRPC server, generation manager and tool client."""

    def __init__(self, settings: AgentSettings, sessions: Sessions | None = None) -> None:
        """`sessions` makes each variant's model session; default: the providers the
        settings configure. (bench/loadmodel.py passes one that adds its load model.)"""
        self.settings = settings
        self.metrics = AgentMetrics()
        self.tools = GrpcToolExecutor(settings.tools_addr, security=settings.grpc_security)
        self.store = open_run_store(settings.data_dir, settings.database_url or None)
        self.manager = GenerationManager(
            settings, self.tools, sessions or SessionFactory(settings), self.metrics, self.store
        )
        self.running: RunningServer | None = None
        self._metrics_server: WSGIServer | None = None

    @property
    def port(self) -> int:
        assert self.running is not None
        return self.running.port

    async def start(self) -> None:
        interrupted = await self.store.open()
        if interrupted:
            log.warning("runs interrupted by a previous stop", extra={"count": interrupted})
        servicer = AgentServicer(self.manager, self.settings, self.metrics)

        def register(server: grpc.aio.Server) -> Sequence[str]:
            pb_grpc.add_AgentServiceServicer_to_server(servicer, server)
            return [pb.DESCRIPTOR.services_by_name["AgentService"].full_name]

        self.running = await start_server(
            self.settings.listen, register, self.settings.grpc_security
        )
        if self.settings.metrics_listen:
            host, port = split_host_port(self.settings.metrics_listen)
            self._metrics_server, _ = serve_metrics(self.metrics.registry, host, port)
        log.info("agent listening", extra={"port": self.running.port})

    async def stop(self, grace_s: float | None = None) -> None:
        grace = self.settings.shutdown_grace_s if grace_s is None else grace_s
        if self.running is not None:
            await self.running.health.enter_graceful_shutdown()
        await self.manager.shutdown(grace)
        if self.running is not None:
            await self.running.server.stop(1.0)
        await self.tools.close()
        await self.store.close()
        if self._metrics_server is not None:
            self._metrics_server.shutdown()

    async def serve(self) -> None:
        await self.start()
        assert self.running is not None
        await serve_until_signalled(self.running, self.settings.shutdown_grace_s, self._drain)

    async def _drain(self) -> None:
        await self.manager.shutdown(self.settings.shutdown_grace_s)
        await self.tools.close()
        await self.store.close()
        await self.store.close()
        if self._metrics_server is not None:
            self._metrics_server.shutdown()
