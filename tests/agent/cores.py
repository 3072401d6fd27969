"""The agent's core in-process, driven the way the servicer drives it: plan, then start."""

from __future__ import annotations

from services.agent.core import AgentCore
from services.agent.domain import GenerationRequest
from services.agent.eventlog import CodePace
from services.agent.generation import Generation
from services.agent.metrics import AgentMetrics
from services.agent.providers.factory import SessionFactory
from services.agent.runstore import RunStore
from services.agent.settings import AgentSettings
from services.agent.tooling import ToolExecutor


class Manager:
    """An `AgentCore` with the surface tests need: `start` plans the request first."""

    def __init__(
        self,
        settings: AgentSettings,
        tools: ToolExecutor,
        sessions: SessionFactory,
        metrics: AgentMetrics | None = None,
        store: RunStore | None = None,
    ) -> None:
        self.metrics = metrics or AgentMetrics()
        self.core = AgentCore.compose(settings, tools, sessions, self.metrics, store)

    @property
    def code_pace(self) -> CodePace:
        return self.core.manager.code_pace

    def start(self, request: GenerationRequest, *, deadline_s: float | None = None) -> Generation:
        plan = self.core.planner.plan(request)
        return self.core.manager.start(plan, deadline_s=deadline_s)

    def get(self, generation_id: str) -> Generation | None:
        return self.core.manager.get(generation_id)

    def generations(self) -> list[Generation]:
        return self.core.manager.generations()

    async def shutdown(self, grace_s: float) -> None:
        await self.core.manager.shutdown(grace_s)
