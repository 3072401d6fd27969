"""The run store in one SQLite file (WAL), for a single agent process.

One connection, used only on one dedicated worker thread: sqlite3 blocks, and a
single thread also serialises every statement, so saves never contend with each
other inside the process and the event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from services.agent import runstore as rs
from services.agent.runstore import RunRecord

T = TypeVar("T")


class SqliteRunStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._owner = rs.new_owner()
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None  # touched on the worker thread only

    async def open(self) -> int:
        if self._executor is not None:
            raise RuntimeError("run store is already open")
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="runstore-sqlite")
        return await rs.closed_unless_opened(self, self._call(self._open))

    async def save(self, run: RunRecord) -> None:
        await self._call(self._save, run)

    async def get(self, generation_id: str) -> RunRecord | None:
        return await self._call(self._get, generation_id)

    async def close(self) -> None:
        executor, self._executor = self._executor, None
        if executor is None:
            return
        try:
            # Queued behind every pending save, so those land before the file closes.
            await asyncio.wrap_future(executor.submit(self._close))
        finally:
            executor.shutdown(wait=False)

    async def _call(self, fn: Callable[..., T], *args: object) -> T:
        if self._executor is None:
            raise RuntimeError("run store is not open")
        # Shielded: a caller cancelled mid-save (a generation being cancelled saves
        # its final record from a `finally`) must not lose the write; the thread
        # finishes the transaction either way.
        return await asyncio.shield(asyncio.wrap_future(self._executor.submit(fn, *args)))

    # ------------------------------------------------------------ worker thread

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("run store is not open")
        return self._conn

    @contextmanager
    def _transaction(self, begin: str = "BEGIN IMMEDIATE") -> Iterator[sqlite3.Connection]:
        # IMMEDIATE takes the write lock up front, so a write transaction never
        # fails half-way on a lock upgrade when another process shares the file.
        db = self._db()
        db.execute(begin)
        try:
            yield db
        except BaseException:
            db.rollback()
            raise
        db.commit()

    def _open(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit mode: transactions are explicit, so none is ever left open.
        conn = sqlite3.connect(self.path, isolation_level=None)
        self._conn = conn
        conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL under WAL: a crash of this process loses nothing; only a power
        # cut can lose the last commits, and a run record is not worth an fsync each.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=5000")
        now = time.time()
        with self._transaction() as db:
            db.execute(rs.CREATE_MIGRATIONS)
            applied = {row[0] for row in db.execute(rs.APPLIED_VERSIONS)}
            for version, statements in enumerate(rs.MIGRATIONS, start=1):
                if version in applied:
                    continue
                for statement in statements:
                    db.execute(statement)
                db.execute(rs.RECORD_VERSION, (version, now))
            # One process per file: every "running" run belongs to a dead process.
            interrupted = 0
            for (owner,) in db.execute(rs.RUNNING_OWNERS).fetchall():
                db.execute(rs.INTERRUPT_VARIANTS, (owner,))
                interrupted += db.execute(rs.INTERRUPT_RUNS, (now, now, owner)).rowcount
        return interrupted

    def _save(self, run: RunRecord) -> None:
        now = time.time()
        run = rs.closed(run, now)
        with self._transaction() as db:
            if db.execute(rs.UPSERT_RUN, rs.run_params(run, self._owner, now)).rowcount == 0:
                return  # a stale "running" snapshot of a run already closed
            db.execute(rs.DELETE_TOOL_CALLS, (run.generation_id,))
            db.execute(rs.DELETE_VARIANTS, (run.generation_id,))
            db.executemany(rs.INSERT_VARIANT, rs.variant_params(run))
            db.executemany(rs.INSERT_TOOL_CALL, rs.tool_call_params(run))

    def _get(self, generation_id: str) -> RunRecord | None:
        with self._transaction("BEGIN") as db:
            key = (generation_id,)
            runs = db.execute(rs.SELECT_RUN, key).fetchall()
            if not runs:
                return None
            variants = db.execute(rs.SELECT_RUN_VARIANTS, key).fetchall()
            calls = db.execute(rs.SELECT_RUN_TOOL_CALLS, key).fetchall()
        return rs.assemble(runs, variants, calls)[0]

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
