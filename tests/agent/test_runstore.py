"""The run store, one suite run against both backends: SQLite and a real PostgreSQL."""

from __future__ import annotations

import asyncio
import gc
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from services.agent.archive import snapshot
from services.agent.domain import (
    FileState,
    GenerationRequest,
    Prompt,
    ToolCallRecord,
    VariantRecord,
)
from services.agent.events import (
    Accessibility,
    Fidelity,
    FidelityRegion,
    RefineRound,
)
from services.agent.generation import Generation
from services.agent.metrics import AgentMetrics
from services.agent.pricing import Usage
from services.agent.runstore import REDACTED, RunRecord, RunStore
from services.agent.runstore_health import ObservedRunStore, RecordNotSaved, StoreUnavailable
from services.agent.runstore_postgres import PostgresRunStore
from services.agent.runstore_sqlite import SqliteRunStore
from services.agent.server import open_run_store
from services.common.accessibility import A11yNode, A11yViolation
from services.common.credentials import Credentials, Endpoint
from services.common.storage import StorageHealth
from tests.pg import PostgresServer, postgres_server

T0 = 1_760_000_000.25


@dataclass(frozen=True)
class Backend:
    name: str
    make: Callable[[], RunStore]  # a new store on the same database, like a restart
    dump: Callable[[], Awaitable[bytes]]  # everything stored, for the secret check


@pytest.fixture(scope="module")
def pg_server() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


async def _postgres_backend(server: PostgresServer, data_dir: Path) -> Backend:
    database = "t_" + uuid.uuid4().hex
    async with await psycopg.AsyncConnection.connect(server.dsn, autocommit=True) as conn:
        await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    dsn = server.dsn_for(database)

    async def dump() -> bytes:
        rows: list[str] = []
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            cursor = await conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            )
            tables = [row[0] for row in await cursor.fetchall()]
            assert {"runs", "variants", "tool_calls"} <= set(tables)
            for table in tables:
                query = sql.SQL("SELECT t::text FROM {} AS t").format(sql.Identifier(table))
                rows += [row[0] for row in await (await conn.execute(query)).fetchall()]
        return "\n".join(rows).encode()

    return Backend("postgres", lambda: open_run_store(data_dir, dsn), dump)


def _sqlite_backend(data_dir: Path) -> Backend:
    path = data_dir / "runs.sqlite3"

    def read_all() -> bytes:
        # The main file plus the WAL (and its index): recent commits live in the WAL.
        return b"".join(p.read_bytes() for p in sorted(data_dir.glob("runs.sqlite3*")))

    async def dump() -> bytes:
        assert path.exists()
        return await asyncio.to_thread(read_all)

    return Backend("sqlite", lambda: open_run_store(data_dir, None), dump)


@pytest.fixture(params=["sqlite", "postgres"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        return _sqlite_backend(tmp_path / "data")
    return await _postgres_backend(request.getfixturevalue("pg_server"), tmp_path)


@asynccontextmanager
async def opened(backend: Backend) -> AsyncIterator[RunStore]:
    store = backend.make()
    await store.open()
    try:
        yield store
    finally:
        await store.close()


def a_run(generation_id: str = "gen-1", started_at: float = T0) -> RunRecord:
    return RunRecord(
        generation_id=generation_id,
        status="completed",
        started_at=started_at,
        finished_at=started_at + 42.5,
        error="",
        request={"type": "create", "prompt_text": "Une boulangerie ✓", "models": ["demo"]},
        variants=(
            VariantRecord(
                index=0,
                model="claude-opus-4-8",
                status="completed",
                code="<html><body>bakery</body></html>",
                usage=Usage(1200, 3400, 500, 60, 5160),
                cost_usd=0.0123,
                priced=True,
                tool_calls=(
                    ToolCallRecord("call_1", "create_file", True, 120),
                    ToolCallRecord("call_2", "screenshot_preview", False, 3400),
                    ToolCallRecord("call_3", "edit_file", True, 7),
                ),
                # A site: the entry page (stored once, as `code`) and its other files.
                files=(
                    FileState("index.html", "<html><body>bakery</body></html>"),
                    FileState("pricing.html", "<p>Prix ✓</p>"),
                    FileState("css/site.css", "p { color: red }"),
                ),
            ),
            VariantRecord(index=1, model="gpt-5.5", status="failed", error="rate limited"),
        ),
    )


async def test_round_trip_keeps_variants_and_tool_calls(backend: Backend) -> None:
    run = a_run()
    async with opened(backend) as store:
        assert await store.get("gen-1") is None
        await store.save(run)
        assert await store.get("gen-1") == run
    async with opened(backend) as store:  # durable across a restart
        assert await store.get("gen-1") == run
    assert run.cost_usd == pytest.approx(0.0123)


async def test_usage_totals_and_the_priced_flag_round_trip(backend: Backend) -> None:
    usage = Usage(400, 500, 600, 0, 1500)
    run = replace(
        a_run("gen-usage"),
        variants=(
            VariantRecord(0, "gpt-5.5", "completed", usage=usage, cost_usd=0.0091, priced=True),
            # A local model: tokens counted, no price; the record must not read as $0.
            VariantRecord(1, "local:tiny", "completed", usage=usage, cost_usd=0.0, priced=False),
        ),
    )
    async with opened(backend) as store:
        await store.save(run)
    async with opened(backend) as store:
        stored = await store.get("gen-usage")
    assert stored is not None
    assert [(v.usage, v.cost_usd, v.priced) for v in stored.variants] == [
        (usage, 0.0091, True),
        (usage, 0.0, False),
    ]


async def test_fidelity_scores_round_trip_unset_metrics_included(backend: Backend) -> None:
    region = FidelityRegion(60, 120, 300, 28, "Fresh bread", "Stale cake", "missing")
    scored = Fidelity(0, 1000, 0.91, 1.0, 0.5, 0.75, 0.25, regions=(region,))
    unavailable = Fidelity(1, 0, unavailable_reason="no render: timed out")
    # The accessibility checks likewise, violations and their elements included.
    violation = A11yViolation("image-alt", "critical", "Alt", "u", 3, (A11yNode("img", "<img>"),))
    checked = Accessibility(390, "pricing.html", 0.75, (violation,), 21, "axe-core 4.14.1")
    checks = (checked, Accessibility(1000, unavailable_reason="no render: timed out"))
    first = VariantRecord(0, "demo", "completed", fidelity=(scored, unavailable))
    rounds = (RefineRound(0, 0.67), RefineRound(1, 0.82), RefineRound(2, 0.6, rolled_back=True))
    first = replace(first, accessibility=checks, refine_rounds=rounds)
    run = replace(a_run("gen-fidelity"), variants=(first, VariantRecord(1, "demo", "completed")))
    async with opened(backend) as store:
        await store.save(run)
    async with opened(backend) as store:
        stored = await store.get("gen-fidelity")
    assert stored is not None
    assert [v.fidelity for v in stored.variants] == [(scored, unavailable), ()]
    assert [v.accessibility for v in stored.variants] == [checks, ()]
    assert [v.refine_rounds for v in stored.variants] == [rounds, ()]


async def test_upsert_from_start_to_finish(backend: Backend) -> None:
    final = a_run()
    start = replace(
        final,
        status="running",
        finished_at=None,
        variants=tuple(
            replace(v, status="running", error="", code="", tool_calls=(), files=())
            for v in final.variants
        ),
    )
    midway = replace(
        start,
        variants=(
            replace(start.variants[0], tool_calls=final.variants[0].tool_calls[:1]),
            *start.variants[1:],
        ),
    )
    async with opened(backend) as store:
        for run in (start, midway, final, final):
            await store.save(run)
            assert await store.get("gen-1") == run
        # A "running" snapshot that lands late (or after a crash sweep) never reopens it.
        await store.save(midway)
        assert await store.get("gen-1") == final


async def test_a_closed_run_never_keeps_a_running_variant(backend: Backend) -> None:
    running = VariantRecord(0, "demo", "running")
    done = VariantRecord(1, "demo", "completed", code="<p>ok</p>")
    before = time.time()
    async with opened(backend) as store:
        await store.save(RunRecord("c", "cancelled", T0, None, variants=(running, done)))
        await store.save(RunRecord("f", "failed", T0, T0 + 1, "boom", variants=(running, done)))
        cancelled, failed = await store.get("c"), await store.get("f")
    assert cancelled is not None
    assert failed is not None
    assert cancelled.finished_at is not None
    assert cancelled.finished_at >= before
    assert [v.status for v in cancelled.variants] == ["cancelled", "completed"]
    assert failed.finished_at == T0 + 1
    assert [v.status for v in failed.variants] == ["interrupted", "completed"]


async def test_open_marks_runs_left_running_by_a_crash_interrupted(backend: Backend) -> None:
    crashed = replace(
        a_run("crashed"),
        status="running",
        finished_at=None,
        variants=(replace(a_run().variants[0], status="running"), a_run().variants[1]),
    )
    store = backend.make()
    assert await store.open() == 0
    await store.save(crashed)
    await store.save(a_run("finished"))
    await store.close()  # the process dies here: "crashed" was never closed

    before = time.time()
    restarted = backend.make()
    try:
        assert await restarted.open() == 1
        record = await restarted.get("crashed")
        assert record is not None
        assert record.status == "interrupted"
        assert record.finished_at is not None
        assert record.finished_at >= before
        assert [v.status for v in record.variants] == ["interrupted", "failed"]
        assert record.variants[0].tool_calls == crashed.variants[0].tool_calls
        assert await restarted.get("finished") == a_run("finished")
    finally:
        await restarted.close()
    again = backend.make()
    try:
        assert await again.open() == 0
    finally:
        await again.close()


async def test_concurrent_saves_from_many_tasks(backend: Backend) -> None:
    runs = [a_run(f"gen-{i:02d}", T0 + i) for i in range(40)]
    shared = a_run("shared", T0 - 1)
    async with opened(backend) as store:
        await asyncio.gather(
            *(store.save(run) for run in runs), *(store.save(shared) for _ in range(20))
        )
        for run in [*runs, shared]:
            assert await store.get(run.generation_id) == run


async def test_a_cancelled_caller_does_not_lose_its_save(backend: Backend) -> None:
    run = a_run()
    async with opened(backend) as store:
        task = asyncio.create_task(store.save(run))
        # call_soon runs callbacks in order: once this fires, the save has been handed
        # to the store and is waiting on it.
        handed_over = asyncio.Event()
        asyncio.get_running_loop().call_soon(handed_over.set)
        await handed_over.wait()
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await store.get("gen-1") == run


async def test_keys_are_never_stored(backend: Backend) -> None:
    credentials = Credentials.of(
        openai=Endpoint(
            "sk-proj-OPENAIKEY0a1b2c3d4e5f", "https://proxy.example/v1?token=BASEURLTOKEN0a1b2c3"
        ),
        anthropic=Endpoint("sk-ant-ANTHROPICKEY0a1b2c3d4e5f"),
        gemini=Endpoint("AIzaGEMINIKEY0a1b2c3d4e5f"),
        replicate=Endpoint("r8_REPLICATETOKEN0a1b2c3d4e5f"),
    )
    service_key = "sk-env-SERVICEKEY0a1b2c3d4e5f"
    secrets = [*credentials.secrets(), service_key, "BASEURLTOKEN0a1b2c3"]
    request = GenerationRequest(
        "gen-secret",
        input_mode="text",
        prompt=Prompt(text=f"A bakery page; my key is {credentials.key('openai')}"),
        credentials=credentials,
        models=("gpt-5.5",),
    )
    generation = Generation("gen-secret", request)
    generation.variants = [
        VariantRecord(
            0,
            "gpt-5.5",
            status="failed",
            error=f"401 Incorrect API key provided: {credentials.key('openai')}",
            tool_calls=(ToolCallRecord("call_1", "create_file", True, 12),),
        ),
        VariantRecord(
            1,
            "claude-opus-4-8",
            status="completed",
            code="<h1>bakery</h1>",
            # A site's other page, where a model echoed a key: redacted like `code`.
            files=(
                FileState("index.html", "<h1>bakery</h1>"),
                FileState("about.html", f"<p>key {credentials.key('anthropic')}</p>"),
            ),
        ),
    ]
    generation.status, generation.error = "failed", f"upstream rejected {service_key}"
    generation.finished_at = time.time()
    run = snapshot(generation, secrets=[service_key])
    assert run.request["prompt_text"] == f"A bakery page; my key is {REDACTED}"
    assert run.request["image_count"] == 0
    assert run.request["models"] == ["gpt-5.5"]

    async with opened(backend) as store:
        await store.save(run)
        assert await store.get("gen-secret") == run
        dumps = [await backend.dump()]
    dumps.append(await backend.dump())  # after close: SQLite has checkpointed the WAL
    for dump in dumps:
        # The dump does see the record, so the absence below means something.
        for present in ("bakery", "call_1", REDACTED, "upstream rejected"):
            assert present.encode() in dump
        for secret in secrets:
            assert secret.encode() not in dump, secret


async def test_open_spares_the_runs_of_a_live_replica(
    pg_server: PostgresServer, tmp_path: Path
) -> None:
    backend = await _postgres_backend(pg_server, tmp_path)
    running = replace(a_run("live"), status="running", finished_at=None)
    first = backend.make()
    await first.open()
    await first.save(running)
    second = backend.make()
    try:
        assert await second.open() == 0  # `first` is alive: its run goes on
        assert await second.get("live") == running
        await first.close()  # now `first` is gone without closing its run
        third = backend.make()
        try:
            assert await third.open() == 1
            record = await third.get("live")
        finally:
            await third.close()
        assert record is not None
        assert record.status == "interrupted"
    finally:
        await first.close()
        await second.close()


def test_open_run_store_picks_the_backend(tmp_path: Path) -> None:
    sqlite = open_run_store(tmp_path, None)
    assert isinstance(sqlite, SqliteRunStore)
    assert sqlite.path == tmp_path / "runs.sqlite3"
    assert isinstance(open_run_store(tmp_path, ""), SqliteRunStore)
    for url in ("postgres://u@db/runs", "postgresql://u@db:5432/runs"):
        assert isinstance(open_run_store(tmp_path, url), PostgresRunStore)


async def test_a_store_must_be_open(backend: Backend) -> None:
    store = backend.make()
    with pytest.raises(RuntimeError, match="not open"):
        await store.get("gen-1")
    await store.open()
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(RuntimeError, match="not open"):
        await store.save(a_run())


# ---------------------------------------------------------------- a failing data directory


def _unusable_data_dir(tmp_path: Path) -> Path:
    # Root ignores permission bits, so a read-only directory would still be written. A
    # data directory under a regular file fails for every user (mkdir: NotADirectoryError).
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the data directory's parent should be")
    return blocker / "data"


def _mend(tmp_path: Path) -> None:
    (tmp_path / "blocker").unlink()
    (tmp_path / "blocker").mkdir()


async def test_a_store_that_cannot_open_starts_degraded_and_heals(tmp_path: Path) -> None:
    metrics = AgentMetrics()
    health = StorageHealth("runs", metrics.storage)
    store = ObservedRunStore(open_run_store(_unusable_data_dir(tmp_path), None), health)
    run = a_run()
    try:
        assert await store.open() == 0
        assert not health.ok
        assert health.state.op == "open"
        assert "NotADirectoryError" in health.state.cause
        with pytest.raises(StoreUnavailable, match="NotADirectoryError"):
            await store.save(run)
        assert store.unsaved("gen-1")
        with pytest.raises(RecordNotSaved, match="could not be saved"):
            await store.get("gen-1")
        errors = metrics.registry.get_sample_value(
            "s2c_storage_errors_total", {"store": "runs", "op": "save"}
        )
        assert errors == 1
        assert metrics.registry.get_sample_value("s2c_storage_healthy", {"store": "runs"}) == 0

        _mend(tmp_path)
        await store.save(run)  # opens on the way: no restart needed
        assert health.ok
        assert not store.unsaved("gen-1")
        assert await store.get("gen-1") == run
        assert metrics.registry.get_sample_value("s2c_storage_healthy", {"store": "runs"}) == 1
    finally:
        await store.close()


async def test_a_failed_save_whose_caller_was_cancelled_is_still_observed(
    tmp_path: Path,
) -> None:
    loop = asyncio.get_running_loop()
    unretrieved: list[str] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: unretrieved.append(str(context["message"])))
    health = StorageHealth("runs")
    store = ObservedRunStore(open_run_store(_unusable_data_dir(tmp_path), None), health)
    try:
        await store.open()
        store.health.succeeded()  # as if it had opened: the save below is what fails
        task = asyncio.create_task(store.save(a_run()))
        handed_over = asyncio.Event()
        loop.call_soon(handed_over.set)
        await handed_over.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await store.close()  # waits for the save the cancelled caller left behind
        gc.collect()
        assert not health.ok
        assert store.unsaved("gen-1")
        assert unretrieved == []
    finally:
        loop.set_exception_handler(previous)


async def test_a_failing_store_retries_its_newest_record_until_it_lands(tmp_path: Path) -> None:
    health = StorageHealth("runs")
    store = ObservedRunStore(
        open_run_store(_unusable_data_dir(tmp_path), None), health, retry_s=0.01
    )
    retrying = asyncio.create_task(store.retry_while_failing())
    try:
        await store.open()
        with pytest.raises(StoreUnavailable):
            await store.save(a_run("lost-then-found"))
        _mend(tmp_path)
        assert await health.wait_change(False) is True  # no new save was asked for
        assert await store.get("lost-then-found") == a_run("lost-then-found")
    finally:
        retrying.cancel()
        with pytest.raises(asyncio.CancelledError):
            await retrying
        await store.close()
