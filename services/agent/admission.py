"""Admission control: a bound on the variants running in one agent process.

Past the bound a new generation is refused at once (the servicer answers
RESOURCE_EXHAUSTED, the gateway tries another agent, then tells the browser to retry)
instead of being admitted into a saturated event loop, where every running generation
would slow down and some would time out with nothing to show.
"""

from __future__ import annotations

from collections.abc import Callable

from services.agent.domain import GenerationRequest
from services.agent.models import variant_count
from services.agent.providers import registry
from services.agent.settings import AgentSettings

DEMO_VARIANTS = 2


class Busy(Exception):
    """This agent already runs as many variants as it may."""


def variant_plan(request: GenerationRequest, settings: AgentSettings) -> tuple[int, frozenset[str]]:
    """How many variants the request runs, and the providers with a key. Raises
    CredentialsError for credentials the policy refuses."""
    count = variant_count(request.generation_type, request.input_mode, request.variant_count)
    credentials = settings.credential_policy.resolve(request.credentials)
    keys = frozenset(p.id for p in registry.KEYED if credentials.key(p.credential))
    pinned = request.models or settings.pinned_models
    if not (keys or pinned or settings.local_models or request.variant_count):
        count = DEMO_VARIANTS
    return count, keys


class Admission:
    def __init__(self, limit: int) -> None:
        self.limit = limit  # 0: no bound
        self.running = 0

    def admit(self, wanted: int) -> Callable[[], None]:
        """Takes `wanted` places, or raises Busy; returns the (idempotent) release. One
        generation alone is always admitted, however many variants it has."""
        if self.limit and self.running and self.running + wanted > self.limit:
            raise Busy(
                f"{self.running} of at most {self.limit} variants are running on this "
                f"agent and this generation needs {wanted}"
            )
        self.running += wanted
        held = [wanted]

        def release() -> None:
            self.running -= held[0]
            held[0] = 0

        return release
