"""A resume whose owner cannot be found now is retryable when an agent did not answer: it
may be the owner, restarting (generate.py answers 1013, not the final 4332)."""

from __future__ import annotations

import socket

import pytest

from services.common.security import GrpcSecurity
from services.gateway.agents import AgentPool, OwnerUnreachable

OWNED = "agent-9-" + "0" * 32


def closed_port() -> int:
    """A port nobody listens on (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_an_owner_among_agents_that_do_not_answer_is_worth_retrying() -> None:
    pool = AgentPool(f"127.0.0.1:{closed_port()},127.0.0.1:{closed_port()}", GrpcSecurity())
    try:
        with pytest.raises(OwnerUnreachable, match=r"unreachable now: 127\.0\.0\.1:"):
            await pool.owner(OWNED)
    finally:
        await pool.close()
