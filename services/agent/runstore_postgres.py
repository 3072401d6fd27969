"""The run store in PostgreSQL, shared by several agent replicas.

Same schema and queries as SQLite. What differs is crash recovery: a starting
replica must close the runs of replicas that died, not of those still running. Each
store holds a session advisory lock named after its owner id for as long as its
connection lives; the server drops it when the process (or its connection) dies. So
at open, an owner whose lock can be taken is dead and its "running" runs are closed.
This needs session-level locks: point it at the server, or at a pooler in session mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import psycopg

from services.agent import runstore as rs
from services.agent.runstore import RunRecord

T = TypeVar("T")
Connection = psycopg.AsyncConnection[tuple[Any, ...]]

# Serialises schema migrations between replicas starting together.
_MIGRATION_LOCK = 0x5332_4352_554E  # "S2CRUN"
_OWNER_KEY = "hashtextextended(%s, 0)"


def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


class PostgresRunStore:
    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._owner = rs.new_owner()
        self._conn: Connection | None = None
        self._lock = asyncio.Lock()
        self._inflight: set[asyncio.Task[Any]] = set()
        self._open = False

    async def open(self) -> int:
        if self._open:
            raise RuntimeError("run store is already open")
        self._open = True
        return await rs.closed_unless_opened(self, self._submit(self._open_db))

    async def save(self, run: RunRecord) -> None:
        await self._submit(lambda conn: self._save(conn, run))

    async def get(self, generation_id: str) -> RunRecord | None:
        return await self._submit(lambda conn: self._get(conn, generation_id))

    async def close(self) -> None:
        self._open = False
        if self._inflight:
            await asyncio.gather(*self._inflight, return_exceptions=True)
        async with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                # The server frees a session's locks only once its backend has exited,
                # some time after the socket closes: unlock first, so a replica that opens
                # right after this one closed never mistakes it for alive.
                with contextlib.suppress(psycopg.Error):
                    await conn.execute(f"SELECT pg_advisory_unlock({_OWNER_KEY})", (self._owner,))
                await conn.close()

    async def _submit(self, op: Callable[[Connection], Awaitable[T]]) -> T:
        if not self._open:
            raise RuntimeError("run store is not open")
        task = asyncio.create_task(self._exclusive(op))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        # Shielded: cancelling a caller (a generation being cancelled saves its final
        # record from a `finally`) must neither lose the write nor interrupt a query
        # half-way on the one shared connection.
        return await asyncio.shield(task)

    async def _exclusive(self, op: Callable[[Connection], Awaitable[T]]) -> T:
        async with self._lock:
            conn = await self._connection()
            try:
                return await op(conn)
            except psycopg.OperationalError:
                if not conn.broken:
                    raise
            # The server restarted or the network dropped: every operation here is
            # idempotent, so one retry on a fresh connection is safe.
            return await op(await self._connection())

    async def _connection(self) -> Connection:
        if self._conn is not None and not self._conn.closed:
            if not self._conn.broken:
                return self._conn
            await self._conn.close()
        # Autocommit: transactions are explicit blocks, so none is left open.
        conn: Connection = await psycopg.AsyncConnection.connect(self._dsn, autocommit=True)
        await conn.execute(f"SELECT pg_advisory_lock({_OWNER_KEY})", (self._owner,))
        self._conn = conn
        return conn

    async def _open_db(self, conn: Connection) -> int:
        now = time.time()
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            await conn.execute(rs.CREATE_MIGRATIONS)
            cursor = await conn.execute(rs.APPLIED_VERSIONS)
            applied = {row[0] for row in await cursor.fetchall()}
            for version, statements in enumerate(rs.MIGRATIONS, start=1):
                if version in applied:
                    continue
                for statement in statements:
                    await conn.execute(statement)
                await conn.execute(_pg(rs.RECORD_VERSION), (version, now))
        cursor = await conn.execute(rs.RUNNING_OWNERS)
        owners = [row[0] for row in await cursor.fetchall()]
        interrupted = 0
        for owner in owners:
            if owner == self._owner:
                continue
            cursor = await conn.execute(f"SELECT pg_try_advisory_lock({_OWNER_KEY})", (owner,))
            taken = await cursor.fetchone()
            if taken is None or not taken[0]:
                continue  # its replica is alive and still working on those runs
            try:
                async with conn.transaction():
                    await conn.execute(_pg(rs.INTERRUPT_VARIANTS), (owner,))
                    cursor = await conn.execute(_pg(rs.INTERRUPT_RUNS), (now, now, owner))
                    interrupted += cursor.rowcount
            finally:
                await conn.execute(f"SELECT pg_advisory_unlock({_OWNER_KEY})", (owner,))
        return interrupted

    async def _save(self, conn: Connection, run: RunRecord) -> None:
        now = time.time()
        run = rs.closed(run, now)
        async with conn.transaction(), conn.cursor() as cur:
            # The upsert also row-locks the run, so two writers of one run (should
            # two replicas ever meet) replace its variants one after the other.
            await cur.execute(_pg(rs.UPSERT_RUN), rs.run_params(run, self._owner, now))
            if cur.rowcount == 0:
                return  # a stale "running" snapshot of a run already closed
            await cur.execute(_pg(rs.DELETE_TOOL_CALLS), (run.generation_id,))
            await cur.execute(_pg(rs.DELETE_VARIANTS), (run.generation_id,))
            if run.variants:
                await cur.executemany(_pg(rs.INSERT_VARIANT), rs.variant_params(run))
            calls = rs.tool_call_params(run)
            if calls:
                await cur.executemany(_pg(rs.INSERT_TOOL_CALL), calls)

    async def _get(self, conn: Connection, generation_id: str) -> RunRecord | None:
        key = (generation_id,)
        runs, variants, calls = await _snapshot_read(
            conn,
            (rs.SELECT_RUN, key),
            (rs.SELECT_RUN_VARIANTS, key),
            (rs.SELECT_RUN_TOOL_CALLS, key),
        )
        return rs.assemble(runs, variants, calls)[0] if runs else None


async def _snapshot_read(
    conn: Connection, *queries: tuple[str, tuple[Any, ...]]
) -> list[list[tuple[Any, ...]]]:
    # One REPEATABLE READ snapshot, so the three SELECTs see the same saves.
    results = []
    async with conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        for sql, params in queries:
            cursor = await conn.execute(_pg(sql), params)
            results.append(await cursor.fetchall())
    return results
