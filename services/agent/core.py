"""The agent's transport-neutral core, composed: planner, manager and archive.

The one place they are wired together, so the gRPC server (server.py) and anything else
that runs generations in-process compose them alike: a request is planned
(planning.py), the plan run by the manager and its runner (manager.py, runner.py), and
the finished generation kept by the archive (archive.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.agent.archive import Archive
from services.agent.manager import GenerationManager
from services.agent.metrics import AgentMetrics
from services.agent.planning import Planner
from services.agent.providers.factory import SessionFactory
from services.agent.runner import Runner
from services.agent.runstore import RunStore
from services.agent.settings import AgentSettings
from services.agent.tooling import FidelityClient, ToolExecutor


@dataclass(frozen=True, slots=True)
class AgentCore:
    planner: Planner
    manager: GenerationManager
    archive: Archive

    @classmethod
    def compose(
        cls,
        settings: AgentSettings,
        tools: ToolExecutor,
        sessions: SessionFactory,
        metrics: AgentMetrics,
        store: RunStore | None = None,
    ) -> AgentCore:
        archive = Archive(settings, metrics, store)
        # The gRPC tool client also scores fidelity; an in-process executor may not.
        fidelity = tools if isinstance(tools, FidelityClient) else None
        runner = Runner(settings, tools, sessions, metrics, archive.save, fidelity)
        return cls(
            Planner(settings), GenerationManager(settings, runner, archive, metrics), archive
        )
