"""A DNS resolver for the address guard's tests: names resolve from a table, lookups recorded."""

from __future__ import annotations

from collections.abc import Sequence

from services.common.netguard import Resolver


def table_resolver(table: dict[str, list[str]], calls: list[str] | None = None) -> Resolver:
    """Resolves each name to its addresses in `table` (OSError otherwise), appending every
    looked-up host to `calls` when given."""

    async def resolve(host: str, port: int) -> Sequence[str]:
        if calls is not None:
            calls.append(host)
        if host not in table:
            raise OSError(f"no such host {host}")
        return table[host]

    return resolve
