"""The run store: a durable record of every generation and its variants.

A record holds what an operator needs after the fact — status, models, each tool
call's timing and outcome, tokens, cost, the final code — and never a credential:
records are built from `request_summary` and `redacted` (archive.py `snapshot`), which
leave keys out and redact them from free text (provider errors sometimes echo the key
they were given).

SQLite (`runstore_sqlite.py`, one file under S2C_DATA_DIR) by default; PostgreSQL
(`runstore_postgres.py`) when several agent replicas share one store; the server picks
one (server.py). Both backends run the DDL and the queries below, so the schemas cannot
drift apart; PostgreSQL only swaps the `?` placeholders for `%s`.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from services.agent.accessibility_proto import accessibility_column, accessibility_from_column
from services.agent.domain import (
    FileState,
    GenerationRequest,
    ToolCallRecord,
    VariantRecord,
)
from services.agent.events import Fidelity, RefineRound, RunStatus, UnrequestedChanges
from services.agent.pricing import Usage

REDACTED = "[redacted]"
SQLITE_FILE = "runs.sqlite3"


@dataclass(frozen=True, slots=True)
class RunRecord:
    generation_id: str
    status: RunStatus
    started_at: float
    finished_at: float | None = None
    error: str = ""
    request: dict[str, Any] = field(default_factory=dict)  # request_summary(); never keys
    variants: tuple[VariantRecord, ...] = ()

    @property
    def cost_usd(self) -> float:
        return sum(v.cost_usd for v in self.variants)


class RunStore(Protocol):
    async def open(self) -> int:
        """Creates or migrates the schema and closes the runs a crashed process left
        "running" (as "interrupted"); returns how many it closed."""
        ...

    async def save(self, run: RunRecord) -> None:
        """Upserts the whole run. Idempotent; a stale "running" save never reopens a
        closed run. The write completes even if the caller is cancelled meanwhile."""
        ...

    async def get(self, generation_id: str) -> RunRecord | None: ...

    async def close(self) -> None: ...


async def closed_unless_opened(store: RunStore, opening: Awaitable[int]) -> int:
    """Awaits a store's `opening` (its schema and crash sweep); on any failure, cancel
    included, closes the store again, so it holds no thread or connection and a later
    `open` starts clean."""
    try:
        return await opening
    except BaseException:
        await store.close()
        raise


# ---------------------------------------------------------------- building records


def redactor(secrets: Iterable[str]) -> tuple[str, ...]:
    """The secrets to redact, in the order `redact` needs them."""
    # Longest first, so a key that contains another is replaced whole.
    return tuple(sorted({s for s in secrets if s}, key=len, reverse=True))


def redact(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def request_summary(request: GenerationRequest, secrets: Iterable[str] = ()) -> dict[str, Any]:
    """What was asked for, without credentials, base URLs (they can embed a token) or
    media (only counts: images are megabytes and may be private)."""
    keys = redactor([*request.credentials.secrets(), *secrets])
    return {
        "type": request.generation_type,
        "input_mode": request.input_mode,
        "stack": request.stack,
        "prompt_text": redact(request.prompt.text, keys),
        "image_count": len(request.prompt.images),
        "video_count": len(request.prompt.videos),
        "history_messages": len(request.history),
        "models": list(request.models),
        "variant_count": request.variant_count,
    }


def redacted(variant: VariantRecord, secrets: tuple[str, ...]) -> VariantRecord:
    """A copy of `variant` (the live record keeps changing while the copy is saved) with
    `secrets` out of its free text."""
    return replace(
        variant,
        error=redact(variant.error, secrets),
        code=redact(variant.code, secrets),
        files=tuple(FileState(f.path, redact(f.content, secrets)) for f in variant.files),
    )


def closed(run: RunRecord, now: float) -> RunRecord:
    """`run` with the invariant "a closed run has nothing running" enforced, so no
    writer can leave a variant "running" under a finished run."""
    if run.status == "running":
        return run
    dangling: RunStatus = "cancelled" if run.status == "cancelled" else "interrupted"
    variants = tuple(
        replace(v, status=dangling) if v.status == "running" else v for v in run.variants
    )
    finished_at = now if run.finished_at is None else run.finished_at
    return replace(run, finished_at=finished_at, variants=variants)


def new_owner() -> str:
    """Identifies one store instance (one process) as the writer of its runs."""
    return uuid.uuid4().hex


# ---------------------------------------------------------------- shared SQL

CREATE_MIGRATIONS = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    applied_at DOUBLE PRECISION NOT NULL
)"""

# Append-only: each entry is one schema version; never edit an applied one.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE IF NOT EXISTS runs (
            generation_id TEXT PRIMARY KEY,
            status TEXT NOT NULL CHECK (status IN
                ('running', 'completed', 'failed', 'cancelled', 'interrupted')),
            started_at DOUBLE PRECISION NOT NULL,
            finished_at DOUBLE PRECISION,
            updated_at DOUBLE PRECISION NOT NULL,
            error TEXT NOT NULL,
            request TEXT NOT NULL,
            owner TEXT NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS runs_recent ON runs (started_at DESC, generation_id DESC)",
        "CREATE INDEX IF NOT EXISTS runs_running ON runs (owner) WHERE status = 'running'",
        """CREATE TABLE IF NOT EXISTS variants (
            generation_id TEXT NOT NULL REFERENCES runs (generation_id) ON DELETE CASCADE,
            variant_index INTEGER NOT NULL,
            model TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN
                ('running', 'completed', 'failed', 'cancelled', 'interrupted')),
            error TEXT NOT NULL,
            code TEXT NOT NULL,
            input_tokens BIGINT NOT NULL,
            output_tokens BIGINT NOT NULL,
            cache_read_tokens BIGINT NOT NULL,
            cache_write_tokens BIGINT NOT NULL,
            total_tokens BIGINT NOT NULL,
            cost_usd DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (generation_id, variant_index)
        )""",
        """CREATE TABLE IF NOT EXISTS tool_calls (
            generation_id TEXT NOT NULL,
            variant_index INTEGER NOT NULL,
            position INTEGER NOT NULL,
            call_id TEXT NOT NULL,
            name TEXT NOT NULL,
            ok BOOLEAN NOT NULL,
            duration_ms BIGINT NOT NULL,
            PRIMARY KEY (generation_id, variant_index, position),
            FOREIGN KEY (generation_id, variant_index)
                REFERENCES variants (generation_id, variant_index) ON DELETE CASCADE
        )""",
    ),
    (
        # Whether the price table had the model, so an unpriced variant reads as such,
        # not as $0. Runs saved before this knew no flag: a non-zero cost was priced.
        "ALTER TABLE variants ADD COLUMN priced BOOLEAN NOT NULL DEFAULT FALSE",
        "UPDATE variants SET priced = (cost_usd > 0)",
    ),
    ("ALTER TABLE variants ADD COLUMN files TEXT NOT NULL DEFAULT ''",),
    (
        # The variant's fidelity scores (proto VariantRecord.fidelity) as a JSON list:
        # read and written whole, never queried by their parts.
        "ALTER TABLE variants ADD COLUMN fidelity TEXT NOT NULL DEFAULT '[]'",
    ),
    # The accessibility checks (VariantRecord.accessibility), a JSON list likewise.
    ("ALTER TABLE variants ADD COLUMN accessibility TEXT NOT NULL DEFAULT '[]'",),
    # The variant's refinement rounds (proto VariantRecord.refine_rounds), likewise.
    ("ALTER TABLE variants ADD COLUMN refine_rounds TEXT NOT NULL DEFAULT '[]'",),
    # An update's change checks (VariantRecord.unrequested_changes), likewise.
    ("ALTER TABLE variants ADD COLUMN unrequested_changes TEXT NOT NULL DEFAULT '[]'",),
)
APPLIED_VERSIONS = "SELECT version FROM schema_migrations"
RECORD_VERSION = "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)"

# The WHERE keeps a late "running" snapshot from reopening a run already closed
# (by this process or by another replica's crash sweep); closing saves always win.
UPSERT_RUN = """
INSERT INTO runs (generation_id, status, started_at, finished_at, updated_at, error, request, owner)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (generation_id) DO UPDATE SET
    status = excluded.status, started_at = excluded.started_at,
    finished_at = excluded.finished_at, updated_at = excluded.updated_at,
    error = excluded.error, request = excluded.request, owner = excluded.owner
WHERE runs.status = 'running' OR excluded.status <> 'running'"""
DELETE_TOOL_CALLS = "DELETE FROM tool_calls WHERE generation_id = ?"
DELETE_VARIANTS = "DELETE FROM variants WHERE generation_id = ?"
INSERT_VARIANT = """
INSERT INTO variants (generation_id, variant_index, model, status, error, code, input_tokens,
    output_tokens, cache_read_tokens, cache_write_tokens, total_tokens, cost_usd, priced, files,
    fidelity, accessibility, refine_rounds, unrequested_changes)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""
INSERT_TOOL_CALL = """
INSERT INTO tool_calls (generation_id, variant_index, position, call_id, name, ok, duration_ms)
VALUES (?, ?, ?, ?, ?, ?, ?)"""

RUNNING_OWNERS = "SELECT DISTINCT owner FROM runs WHERE status = 'running'"
# Variants first: the run's "running" status is what selects them.
INTERRUPT_VARIANTS = """
UPDATE variants SET status = 'interrupted'
WHERE status = 'running' AND generation_id IN
    (SELECT generation_id FROM runs WHERE status = 'running' AND owner = ?)"""
INTERRUPT_RUNS = """
UPDATE runs SET status = 'interrupted', finished_at = ?, updated_at = ?
WHERE status = 'running' AND owner = ?"""

_RUN_COLUMNS = "generation_id, status, started_at, finished_at, error, request"
_VARIANT_COLUMNS = (
    "generation_id, variant_index, model, status, error, code, input_tokens, output_tokens, "
    "cache_read_tokens, cache_write_tokens, total_tokens, cost_usd, priced, files, fidelity, "
    "accessibility, refine_rounds, unrequested_changes"
)
_TOOL_COLUMNS = "generation_id, variant_index, call_id, name, ok, duration_ms"

SELECT_RUN = f"SELECT {_RUN_COLUMNS} FROM runs WHERE generation_id = ?"
SELECT_RUN_VARIANTS = f"SELECT {_VARIANT_COLUMNS} FROM variants WHERE generation_id = ?"
SELECT_RUN_TOOL_CALLS = (
    f"SELECT {_TOOL_COLUMNS} FROM tool_calls WHERE generation_id = ? "
    "ORDER BY variant_index, position"
)

Row = Sequence[Any]


def run_params(run: RunRecord, owner: str, now: float) -> tuple[Any, ...]:
    return (
        run.generation_id,
        run.status,
        run.started_at,
        run.finished_at,
        now,
        run.error,
        json.dumps(run.request, ensure_ascii=False, sort_keys=True),
        owner,
    )


def variant_params(run: RunRecord) -> list[tuple[Any, ...]]:
    return [
        (
            run.generation_id,
            v.index,
            v.model,
            v.status,
            v.error,
            v.code,
            v.usage.input_tokens,
            v.usage.output_tokens,
            v.usage.cache_read_tokens,
            v.usage.cache_write_tokens,
            v.usage.total_tokens,
            v.cost_usd,
            v.priced,
            _files_column(v.files, v.code),
            json.dumps([asdict(f) for f in v.fidelity]),
            accessibility_column(v.accessibility),
            json.dumps([asdict(r) for r in v.refine_rounds]),
            json.dumps([asdict(c) for c in v.unrequested_changes]),
        )
        for v in run.variants
    ]


def _files_column(files: tuple[FileState, ...], code: str) -> str:
    if not files:
        return ""
    # The entry page is nearly always `code`, stored once (null here).
    entry = None if files[0].content == code else files[0].content
    rows = [[files[0].path, entry], *([f.path, f.content] for f in files[1:])]
    return json.dumps(rows, ensure_ascii=False)


def _files_from_column(column: str, code: str) -> tuple[FileState, ...]:
    if not column:
        return ()
    rows = json.loads(column)
    return tuple(FileState(path, code if content is None else content) for path, content in rows)


def tool_call_params(run: RunRecord) -> list[tuple[Any, ...]]:
    return [
        (run.generation_id, v.index, position, t.id, t.name, t.ok, t.duration_ms)
        for v in run.variants
        for position, t in enumerate(v.tool_calls)
    ]


def assemble(
    runs: Iterable[Row], variants: Iterable[Row], tool_calls: Iterable[Row]
) -> list[RunRecord]:
    """RunRows from the three SELECTs' rows, in the order of `runs`."""
    calls: defaultdict[tuple[str, int], list[ToolCallRecord]] = defaultdict(list)
    for gid, index, call_id, name, ok, duration_ms in tool_calls:
        calls[(gid, index)].append(ToolCallRecord(call_id, name, bool(ok), int(duration_ms)))
    by_run: defaultdict[str, list[VariantRecord]] = defaultdict(list)
    for (
        gid,
        index,
        model,
        status,
        error,
        code,
        *tokens,
        cost,
        priced,
        files,
        fidelity,
        a11y,
        rounds,
        changes,
    ) in variants:
        by_run[gid].append(
            VariantRecord(
                index=index,
                model=model,
                status=status,
                error=error,
                code=code,
                usage=Usage(*(int(t) for t in tokens)),
                cost_usd=float(cost),
                priced=bool(priced),
                tool_calls=tuple(calls[(gid, index)]),
                files=_files_from_column(files, code),
                fidelity=tuple(Fidelity.from_dict(f) for f in json.loads(fidelity or "[]")),
                accessibility=accessibility_from_column(a11y),
                refine_rounds=tuple(RefineRound(**r) for r in json.loads(rounds or "[]")),
                unrequested_changes=tuple(
                    UnrequestedChanges.from_dict(c) for c in json.loads(changes or "[]")
                ),
            )
        )
    return [
        RunRecord(
            generation_id=gid,
            status=status,
            started_at=float(started_at),
            finished_at=None if finished_at is None else float(finished_at),
            error=error,
            request=json.loads(request),
            variants=tuple(sorted(by_run[gid], key=lambda v: v.index)),
        )
        for gid, status, started_at, finished_at, error, request in runs
    ]
