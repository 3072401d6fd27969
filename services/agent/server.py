"""Bootstrap of the agent service process."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.agent.core import AgentCore
from services.agent.metrics import AgentMetrics
from services.agent.providers import registry
from services.agent.providers.factory import ProviderSessions, SessionFactory
from services.agent.runstore import SQLITE_FILE, RunStore
from services.agent.runstore_health import HEALTH_SERVICE, STORE_NAME, ObservedRunStore
from services.agent.servicer import AgentServicer
from services.agent.settings import AgentSettings
from services.agent.tool_client import GrpcToolExecutor
from services.common.grpc_server import GrpcService, open_metrics_port, start_server
from services.common.storage import StorageHealth

log = logging.getLogger(__name__)


def open_run_store(data_dir: Path, database_url: str | None) -> RunStore:
    """PostgreSQL for a postgres:// URL, else SQLite in `data_dir`. Not yet opened. Each
    backend is imported only when chosen (psycopg is of no use to a SQLite agent)."""
    if database_url and database_url.startswith(("postgres://", "postgresql://")):
        from services.agent.runstore_postgres import PostgresRunStore

        return PostgresRunStore(database_url)
    from services.agent.runstore_sqlite import SqliteRunStore

    return SqliteRunStore(data_dir / SQLITE_FILE)


class AgentServer(GrpcService):
    """The agent service, composed: a request is planned (planning.py), run by the
    manager and its runner (manager.py, runner.py) and then kept by the archive
    (archive.py), over the run store, tool client and model sessions chosen here."""

    def __init__(self, settings: AgentSettings, sessions: SessionFactory | None = None) -> None:
        """`sessions` makes each variant's model session; default: the providers the
        settings configure. (bench/loadmodel.py passes one that adds its load model.)"""
        super().__init__(settings.shutdown_grace_s)
        self.settings = settings
        self.metrics = AgentMetrics()
        self.tools = GrpcToolExecutor(settings.tools_addr, security=settings.grpc_security)
        # A failing store is reported (health service HEALTH_SERVICE, metrics, logs), never
        # fatal: generations run without their records.
        self.store = ObservedRunStore(
            open_run_store(settings.data_dir, settings.database_url or None),
            StorageHealth(STORE_NAME, self.metrics.storage),
        )
        # The providers' SDK clients are ours to close only when we built the factory.
        self.providers: ProviderSessions | None = None
        if sessions is None:
            sessions = self.providers = ProviderSessions(settings)
        self.core = AgentCore.compose(settings, self.tools, sessions, self.metrics, self.store)
        self.manager = self.core.manager
        self._background: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        servicer = AgentServicer(self.settings, self.core, self.tools, self.metrics)

        def register(server: grpc.aio.Server) -> Sequence[str]:
            pb_grpc.add_AgentServiceServicer_to_server(servicer, server)
            return [pb.DESCRIPTOR.services_by_name["AgentService"].full_name]

        # What opens here closes again if a later step fails; then the server owns it and
        # closes it after the grace, when no generation needs the store or the tools any more.
        async with AsyncExitStack() as opening:
            await self.store.open()
            opening.push_async_callback(self.store.close)
            opening.push_async_callback(self.tools.close)
            if self.providers is not None:
                opening.push_async_callback(self.providers.aclose)
            open_metrics_port(opening, self.metrics.registry, self.settings.metrics_listen)
            resources = opening.pop_all()
        # The drain: generations nobody streams get the same grace as the RPCs.
        self.running = await start_server(
            self.settings.listen,
            register,
            self.settings.grpc_security,
            resources=resources,
            drain=self.manager.shutdown,
        )
        health_servicer = self.running.health
        await health_servicer.set(HEALTH_SERVICE, _serving(self.store.health.ok))
        self._background = [
            asyncio.create_task(self._publish_store_health(health_servicer)),
            asyncio.create_task(self.store.retry_while_failing()),
        ]
        self.running.resources.push_async_callback(self._stop_background)
        log.info("agent listening", extra={"port": self.running.port})

    def startup_modules(self) -> Sequence[str]:
        # The SDKs of the providers this agent has keys for, frozen with its startup heap.
        return registry.configured_modules(self.settings)

    async def _publish_store_health(self, servicer: health.aio.HealthServicer) -> None:
        ok = self.store.health.ok
        while True:
            ok = await self.store.health.wait_change(ok)
            await servicer.set(HEALTH_SERVICE, _serving(ok))

    async def _stop_background(self) -> None:
        tasks, self._background = self._background, []
        for task in tasks:
            task.cancel()
        # return_exceptions: a background task's own failure is retrieved, not lost.
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(outcome, Exception):
                log.error("agent background task failed", exc_info=outcome)


def _serving(ok: bool) -> health_pb2.HealthCheckResponse.ServingStatus.ValueType:
    status = health_pb2.HealthCheckResponse
    return status.SERVING if ok else status.NOT_SERVING
