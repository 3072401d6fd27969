"""The run store's migrations: a SQLite file written by an older schema opens with every
later column filled in as its migration says."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from services.agent import runstore as rs
from services.agent.pricing import Usage
from services.agent.runstore import RunRecord
from services.agent.runstore_sqlite import SqliteRunStore

T0 = 1_760_000_000.25


def test_a_store_of_the_first_schema_migrates(tmp_path: Path) -> None:
    # A file written by the first schema: a non-zero cost was priced, a zero one unknown.
    path = tmp_path / "runs.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute(rs.CREATE_MIGRATIONS)
        for statement in rs.MIGRATIONS[0]:
            db.execute(statement)
        db.execute(rs.RECORD_VERSION, (1, T0))
        db.execute(
            "INSERT INTO runs VALUES ('old', 'completed', ?, ?, ?, '', '{}', 'gone')", (T0, T0, T0)
        )
        for index, cost in ((0, 0.25), (1, 0.0)):
            db.execute(
                "INSERT INTO variants VALUES "
                "('old', ?, 'm', 'completed', '', '', 1, 2, 3, 4, 10, ?)",
                (index, cost),
            )
    db.close()

    async def reopen() -> RunRecord | None:
        store = SqliteRunStore(path)
        await store.open()
        try:
            return await store.get("old")
        finally:
            await store.close()

    run = asyncio.run(reopen())
    assert run is not None
    assert [(v.usage, v.cost_usd, v.priced) for v in run.variants] == [
        (Usage(1, 2, 3, 4, 10), 0.25, True),
        (Usage(1, 2, 3, 4, 10), 0.0, False),
    ]
    # Saved before projects had files: no files, the code alone.
    assert [v.files for v in run.variants] == [(), ()]
    # Saved before fidelity scores: none.
    assert [v.fidelity for v in run.variants] == [(), ()]
