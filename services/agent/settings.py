"""The agent service's settings: read once from the environment, then passed down.

A leaf: it imports no module of the agent but the models file's reader (endpoints.py,
itself a leaf), so every module it configures may import it
(the values flow down; nothing here knows what uses them).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from services.agent import endpoints as model_endpoints
from services.agent.endpoints import ModelEndpoint
from services.common import settings_env
from services.common.credentials import (
    CredentialPolicy,
    Credentials,
    request_base_urls_allowed,
)
from services.common.images import ImageLimits
from services.common.project_limits import (
    BYTES_ENV,
    DEFAULT_MAX_PROJECT_BYTES,
    DEFAULT_MAX_PROJECT_FILES,
    FILES_ENV,
)
from services.common.security import GrpcSecurity


def _csv(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


# An agent's name prefixes the ids it mints (`<name>-<32 hex>`), and generation ids are
# at most 64 of these characters: the name gets 31 of them.
_NAME = re.compile(r"[A-Za-z0-9_-]{1,31}")
AGENT_NAME_ENV = "S2C_AGENT_NAME"
# Code messages a second a loaded agent aims at (eventlog.CodePace; S2C_CODE_MESSAGES_PER_S).
DEFAULT_CODE_MESSAGES_PER_S = 1000.0


def checked_agent_name(value: str) -> str:
    """`value` if it can name an agent, else ValueError saying what would."""
    if not _NAME.fullmatch(value):
        raise ValueError(
            f"{AGENT_NAME_ENV} must be 1-31 letters, digits, '-' or '_', got {value[:80]!r}"
        )
    return value


def default_agent_name() -> str:
    """This host's name (its first label, made a valid name): stable across restarts where
    the host is (a StatefulSet pod's name, a compose service's `hostname`)."""
    label = socket.gethostname().split(".")[0]
    return re.sub(r"[^A-Za-z0-9_-]", "-", label)[:31] or "agent"


def _agent_name(env: Mapping[str, str]) -> str:
    value = env.get(AGENT_NAME_ENV, "").strip()
    return checked_agent_name(value) if value else default_agent_name()


def _float_or_none(value: str, name: str) -> float | None:
    if not value.strip():
        return None
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number of US dollars, got {value!r}") from None


def _endpoints(env: Mapping[str, str]) -> tuple[ModelEndpoint, ...]:
    """The models file's endpoints. `S2C_LOCAL_*` is the shorthand of an endpoint named
    `local`: the file may define that endpoint only when the shorthand is not used."""
    path = env.get(model_endpoints.MODELS_FILE_ENV, "").strip()
    if not path:
        return ()
    found = model_endpoints.load(path, env)
    shorthand = [n for n in ("S2C_LOCAL_MODELS", "S2C_LOCAL_BASE_URL") if env.get(n, "").strip()]
    if shorthand and any(e.name == "local" for e in found):
        raise model_endpoints.ModelsFileError(
            f"{path}: an endpoint named 'local' and {' and '.join(shorthand)} both define the "
            "local: models; keep one"
        )
    return found


@dataclass(frozen=True, slots=True)
class AgentSettings:
    listen: str = "127.0.0.1:50051"
    # The prefix of the generation ids this agent mints, by which a gateway routes a
    # resume or a cancel to it: unique among a gateway's agents, and the same after a
    # restart (S2C_AGENT_NAME; default: the host name).
    agent_name: str = field(default_factory=default_agent_name)
    tools_addr: str = "127.0.0.1:50052"
    data_dir: Path = Path(".s2c-data")
    credentials: Credentials = field(default_factory=Credentials)
    # Whether requests may name their own *_base_url (always with their own key).
    allow_request_base_urls: bool = True
    max_cost_usd: float | None = None  # per variant, as the seed checks it
    max_total_cost_usd: float | None = None  # over all of a generation's variants; off
    demo_pace_s: float = 0.06
    max_turns: int = 30
    # The calls one model turn may make (S2C_MAX_TOOL_CALLS_PER_TURN): the providers parse
    # no more, the engine runs no more; the model is told how many it lost.
    max_tool_calls_per_turn: int = 16
    # A generation that runs longer than this is stopped (its clients may set a shorter
    # gRPC deadline; the earlier one wins).
    max_generation_s: float = 900.0
    pinned_models: tuple[str, ...] = ()
    local_models: tuple[str, ...] = ()
    local_base_url: str = ""
    # The named endpoints of the models file (S2C_MODELS_FILE), read and checked at start.
    endpoints: tuple[ModelEndpoint, ...] = ()
    # Finished generations kept in memory for re-attaching clients (retention.py):
    # at most this many, this many bytes of events and media, this long; 0: no bound.
    retained_generations: int = 64
    retained_bytes: int = 32 << 20
    retained_seconds: float = 300.0
    shutdown_grace_s: float = 30.0
    # How long a generation no client stream holds runs on, for one to re-attach
    # (WatchGeneration; a browser through any gateway), before it is cancelled.
    resume_grace_s: float = 30.0
    provider_max_retries: int = 2
    metrics_listen: str = ""  # host:port of the /metrics endpoint; empty: off
    grpc_security: GrpcSecurity = field(default_factory=GrpcSecurity)
    database_url: str = ""  # postgresql://… for a shared run store; empty: SQLite in data_dir
    # How long streamed deltas may wait to be merged into one event (see eventlog.py).
    # The same as eventlog.DEFAULT_TICK_S (tests/agent/test_settings.py holds them equal).
    event_tick_s: float = 0.04
    # Code messages a second a loaded agent aims at: past this × 10 ms generations their
    # code ticks stretch, up to 40 ms (eventlog.CodePace). 0: a fixed 10 ms code tick.
    code_messages_per_s: float = DEFAULT_CODE_MESSAGES_PER_S
    # The most one create_file's replayed preview may pause (engine.PreviewReplay); 0: off.
    preview_replay_s: float = 1.0
    # Fidelity (docs/eval.md): each finished variant of a request with input images is
    # scored against them by the tool workers, within this many seconds (0: never scored);
    # and the most `compare_with_reference` (and `check_accessibility`) calls one variant
    # may make.
    fidelity_timeout_s: float = 30.0
    max_compares_per_variant: int = 3
    max_accessibility_checks_per_variant: int = 3
    # Each scored render is also checked by axe-core (docs/accessibility.md;
    # S2C_ACCESSIBILITY=0: not checked, and no `accessibility` events).
    accessibility_enabled: bool = True
    # Refinement (refine.py): a variant's page scored below `refine_target` (the mean of
    # the five metrics) gets up to `refine_rounds` more turns (a request may ask for
    # another number, at most `refine_max_rounds`) with the regions that differ most.
    refine_target: float = 0.9
    refine_rounds: int = 1
    refine_max_rounds: int = 3
    # Admission: a generation that would take the variants running on this agent past
    # this is refused at once (RESOURCE_EXHAUSTED), so admitted ones keep their latency;
    # one generation alone is always admitted. 0: no bound. 200: what one agent process
    # serves at p99 ≤ 150 ms with a fifth of its core to spare (docs/architecture.md).
    max_running_variants: int = 200
    # The pixels one image may decode to (S2C_IMAGE_MAX_PIXELS): requests carrying a
    # larger one are refused, tool images past it are left out (common/images.py).
    images: ImageLimits = field(default_factory=ImageLimits)
    # The most pages a create's tagged images may name (S2C_MAX_PAGES), the most UTF-8
    # bytes all files of one variant may hold together, paths included
    # (S2C_MAX_PROJECT_BYTES), and the most files it may hold (S2C_MAX_PROJECT_FILES).
    max_pages: int = 12
    max_project_bytes: int = DEFAULT_MAX_PROJECT_BYTES
    max_project_files: int = DEFAULT_MAX_PROJECT_FILES
    # The most renders one round of previews of a request may take: widths × pages ×
    # options (S2C_MAX_RENDERS; pages.render_violations). 0: no bound. 96: twelve pages
    # (S2C_MAX_PAGES) at desktop and mobile for four options.
    max_renders: int = 96

    def endpoint(self, name: str) -> ModelEndpoint | None:
        return next((e for e in self.endpoints if e.name == name), None)

    @property
    def credential_policy(self) -> CredentialPolicy:
        return CredentialPolicy(self.credentials, self.allow_request_base_urls)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AgentSettings:
        env = settings_env.environ(env)
        return cls(
            tools_addr=env.get("S2C_TOOLS_ADDR", "127.0.0.1:50052"),
            agent_name=_agent_name(env),
            **settings_env.service_fields(env),
            credentials=Credentials.from_env(env),
            allow_request_base_urls=request_base_urls_allowed(env),
            max_cost_usd=_float_or_none(
                env.get("GENERATION_MAX_COST_USD", ""), "GENERATION_MAX_COST_USD"
            ),
            max_total_cost_usd=_float_or_none(
                env.get("S2C_GENERATION_MAX_TOTAL_COST_USD", ""),
                "S2C_GENERATION_MAX_TOTAL_COST_USD",
            ),
            demo_pace_s=int(env.get("S2C_DEMO_PACE_MS", "60")) / 1000,
            pinned_models=_csv(env.get("S2C_MODELS", "")),
            local_models=_csv(env.get("S2C_LOCAL_MODELS", "")),
            local_base_url=env.get("S2C_LOCAL_BASE_URL", ""),
            endpoints=_endpoints(env),
            database_url=env.get("S2C_DATABASE_URL", ""),
            shutdown_grace_s=float(env.get("S2C_SHUTDOWN_GRACE_S", "30")),
            resume_grace_s=settings_env.seconds(env, "S2C_RESUME_GRACE_S", 30.0),
            max_generation_s=float(env.get("S2C_MAX_GENERATION_S", "900")),
            event_tick_s=int(env.get("S2C_EVENT_TICK_MS", "40")) / 1000,
            code_messages_per_s=settings_env.bound(
                env, "S2C_CODE_MESSAGES_PER_S", str(int(DEFAULT_CODE_MESSAGES_PER_S)), float
            ),
            preview_replay_s=int(env.get("S2C_PREVIEW_REPLAY_MS", "1000")) / 1000,
            fidelity_timeout_s=float(env.get("S2C_FIDELITY_TIMEOUT_S", "30")),
            max_compares_per_variant=int(env.get("S2C_MAX_COMPARES_PER_VARIANT", "3")),
            max_accessibility_checks_per_variant=int(
                env.get("S2C_MAX_ACCESSIBILITY_CHECKS_PER_VARIANT", "3")
            ),
            accessibility_enabled=env.get("S2C_ACCESSIBILITY", "1").strip() != "0",
            refine_target=float(env.get("S2C_REFINE_TARGET", "0.9")),
            refine_rounds=int(env.get("S2C_REFINE_ROUNDS", "1")),
            refine_max_rounds=int(env.get("S2C_REFINE_MAX_ROUNDS", "3")),
            retained_generations=settings_env.bound(env, "S2C_RETAIN_GENERATIONS", "64", int),
            retained_bytes=settings_env.bound(env, "S2C_RETAIN_BYTES", str(32 << 20), int),
            retained_seconds=settings_env.bound(env, "S2C_RETAIN_SECONDS", "300", float),
            max_running_variants=settings_env.bound(env, "S2C_MAX_RUNNING_VARIANTS", "200", int),
            images=ImageLimits.from_env(env),
            max_pages=settings_env.bound(env, "S2C_MAX_PAGES", "12", int),
            max_project_bytes=settings_env.bound(
                env, BYTES_ENV, str(DEFAULT_MAX_PROJECT_BYTES), int
            ),
            max_project_files=settings_env.bound(
                env, FILES_ENV, str(DEFAULT_MAX_PROJECT_FILES), int
            ),
            max_tool_calls_per_turn=int(
                settings_env.positive(env, "S2C_MAX_TOOL_CALLS_PER_TURN", 16)
            ),
            max_renders=settings_env.bound(env, "S2C_MAX_RENDERS", "96", int),
        )
