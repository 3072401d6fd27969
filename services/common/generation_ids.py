"""Generation ids: `<agent name>-<32 hex digits>`, minted by the agent that admits the
generation, so that the id names who holds its event log and record: a gateway sends a
resume or a cancel to the agent of that name (services/gateway/agents.py). One rule for
both sides: the agent mints and checks ids with it, the gateway reads their owner."""

from __future__ import annotations

import re
import uuid

# GenerateCode's response header naming the admitted generation (agent_service.proto):
# the agent sends it as it admits one, its clients read the id from it.
GENERATION_ID_HEADER = "s2c-generation-id"

_MINTED = re.compile(r"(?P<name>[A-Za-z0-9_-]{1,31})-[0-9a-f]{32}")


def mint(agent_name: str) -> str:
    return f"{agent_name}-{uuid.uuid4().hex}"


def owner_name(generation_id: str) -> str | None:
    """The name of the agent that minted `generation_id`; None for an id no agent
    minted (a client's own)."""
    match = _MINTED.fullmatch(generation_id)
    return match.group("name") if match else None
