"""The agent's SDK clients, shared by the sessions that would build identical ones.

A client per session cost each variant a fresh SSL context and a fresh TCP connection
(measured: a fifth of a loaded agent's event loop). Sessions with the same provider,
key, base URL, retries and timeout now share one client and its connection pool. Idle
clients stay for reuse up to a small cap (least recently used goes first); a client a
live session holds is never closed under it; `aclose` closes every one at shutdown.

The pool's keys hold API keys: nothing here logs or shows them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from services.agent.providers.base import (
    ExecutedTool,
    OnEvent,
    PromptMessage,
    ProviderError,
    ProviderSession,
    ProviderTurn,
    SessionConfig,
)

log = logging.getLogger(__name__)

C = TypeVar("C")

# Variables the SDKs read for themselves when a client is built and add to every request
# that client makes, whatever server it points at: a `local:` model's, a request's base
# URL. Organisation and project ids, operator-written headers (a proxy's credentials, as
# like as not) and tokens the SDKs use in place of a key. A credential must reach only the
# endpoint it belongs to, so the agent hands each client all it needs explicitly and
# removes these from its environment before any client is built (`forget_sdk_environment`).
SDK_AMBIENT_ENV = (
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENAI_CUSTOM_HEADERS",
    "OPENAI_ADMIN_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_CUSTOM_HEADERS",
)


def forget_sdk_environment(environ: MutableMapping[str, str]) -> list[str]:
    """Removes `SDK_AMBIENT_ENV` from `environ` (the agent's own, at start); the names of
    those that were set, for a warning (names only: the values may be secrets)."""
    return [name for name in SDK_AMBIENT_ENV if environ.pop(name, None) is not None]


# Idle clients kept beyond those in use: one per distinct credential an agent serves at
# once is the common case; more than a handful idle is memory and sockets for nothing.
IDLE_CLIENTS = 8


@dataclass(frozen=True, slots=True)
class ClientKind(Generic[C]):
    """How one provider builds and closes its SDK client. One kind per provider, so the
    kind in a pool key also says which provider the client is for."""

    name: str  # the provider id
    new: Callable[[SessionConfig], C]
    close: Callable[[C], Awaitable[None]]


@dataclass(slots=True)
class _Entry:
    client: Any
    close: Callable[[], Awaitable[None]]
    users: int = 0


_Key = tuple[str, str, str, str, int, float]


class ClientPool:
    """SDK clients by (provider, key, base URL, API version, retries, timeout), counted
    by user."""

    def __init__(self, idle_cap: int = IDLE_CLIENTS) -> None:
        self._idle_cap = idle_cap
        self._entries: dict[_Key, _Entry] = {}
        self._idle: OrderedDict[_Key, None] = OrderedDict()
        self._closed = False

    def __len__(self) -> int:
        return len(self._entries)

    def session(
        self,
        config: SessionConfig,
        kind: ClientKind[C],
        make: Callable[[C], ProviderSession],
    ) -> ProviderSession:
        """`make(client)` with the pool's client for `config`; closing the session gives
        the client back."""
        key: _Key = (
            kind.name,
            config.api_key,
            config.base_url or "",
            config.api_version,
            config.max_retries,
            config.request_timeout_s,
        )
        entry = self._lease(key, kind, config)
        try:
            session = make(cast(C, entry.client))
        except BaseException:
            self._give_back_now(key, entry)
            raise
        return PooledSession(session, lambda: self._give_back(key, entry))

    def _lease(self, key: _Key, kind: ClientKind[C], config: SessionConfig) -> _Entry:
        if self._closed:
            raise ProviderError("The agent is shutting down.")
        entry = self._entries.get(key)
        if entry is None:
            client = kind.new(config)
            entry = _Entry(client, lambda: kind.close(client))
            self._entries[key] = entry
        else:
            self._idle.pop(key, None)
        entry.users += 1
        return entry

    def _give_back_now(self, key: _Key, entry: _Entry) -> None:
        entry.users -= 1
        if entry.users == 0 and self._entries.get(key) is entry:
            self._idle[key] = None

    def _evicted(self) -> list[_Entry]:
        """The least recently used idle clients beyond the cap, out of the pool."""
        evicted = []
        while len(self._idle) > self._idle_cap:
            oldest, _ = self._idle.popitem(last=False)
            evicted.append(self._entries.pop(oldest))
        return evicted

    async def _give_back(self, key: _Key, entry: _Entry) -> None:
        self._give_back_now(key, entry)
        for evicted in self._evicted():
            await _close(evicted)

    async def aclose(self) -> None:
        """Closes every client, idle or not: at shutdown, once no session runs."""
        self._closed = True
        entries = list(self._entries.values())
        self._entries.clear()
        self._idle.clear()
        await asyncio.gather(*(_close(entry) for entry in entries))


async def _close(entry: _Entry) -> None:
    try:
        await entry.close()
    except Exception as exc:
        # The type only: an SDK's message could quote the request it failed on.
        log.warning("closing a model client failed: %s", type(exc).__name__)


class PooledSession:
    """A session whose client is the pool's: closing it closes the session, then gives
    the client back (closed there only if it is evicted idle)."""

    __slots__ = ("_give_back", "_session")

    def __init__(self, session: ProviderSession, give_back: Callable[[], Awaitable[None]]) -> None:
        self._session = session
        self._give_back: Callable[[], Awaitable[None]] | None = give_back

    @property
    def inner(self) -> ProviderSession:
        return self._session

    async def stream_turn(self, on_event: OnEvent) -> ProviderTurn:
        return await self._session.stream_turn(on_event)

    def append_tool_results(self, turn: ProviderTurn, executed: Sequence[ExecutedTool]) -> None:
        self._session.append_tool_results(turn, executed)

    def append_user_turn(self, turn: ProviderTurn, message: PromptMessage) -> None:
        self._session.append_user_turn(turn, message)

    def total_cost_usd(self) -> float:
        return self._session.total_cost_usd()

    async def close(self) -> None:
        try:
            await self._session.close()
        finally:
            give_back, self._give_back = self._give_back, None
            if give_back is not None:
                await give_back()
