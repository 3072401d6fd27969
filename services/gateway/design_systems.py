"""Design systems: named blocks of style guidance the UI keeps and sends with a generation.

Stored as one JSON list in `data_dir/design-systems.json`, the file upstream uses, so a
user's saved systems survive restarts. Every change is a read-modify-write of the whole
file under one lock, and the write goes to a temporary file renamed into place: two
concurrent requests can never lose each other's update, and a crash mid-write leaves the
previous file intact rather than a truncated one.

Bounded by count, per-system size and total size (`DesignSystemLimits`): the whole list
is what GET returns and what each change rewrites, so the total bounds both. The parsed
list, and each system's encoded JSON, are kept between requests: a change encodes only
the system it touches and writes the rest as bytes already made. The file is re-read only
when its identity (inode, size, mtime) changes, so an edit made outside the gateway is
still seen.

A write that the disk refuses (read-only, full, the data directory gone) is a 503 (507
when the disk is full) that says why, and turns the store's `StorageHealth` failing until
a later write, or a probe from `/healthz`, succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from services.common.storage import StorageHealth, describe

FILE_NAME = "design-systems.json"
STORE_NAME = "design_systems"
MAX_NAME_CHARS = 200
MAX_CONTENT_BYTES = 200 * 1024
# JSON can spell one byte of text as six (`\u0001`): the most a valid body can take.
JSON_ESCAPE_FACTOR = 6
# Out of room: a full disk, a quota, a file-size limit (507 Insufficient Storage).
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})

Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class DesignSystemLimits:
    max_count: int = 100
    max_content_bytes: int = MAX_CONTENT_BYTES  # UTF-8 bytes of one system's content
    # Names plus contents of all systems, in UTF-8 bytes: bounds GET and every rewrite.
    max_total_bytes: int = 4 * 1024 * 1024

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> DesignSystemLimits:
        defaults = cls()
        return cls(
            max_count=int(env.get("S2C_DESIGN_SYSTEMS_MAX_COUNT", defaults.max_count)),
            max_content_bytes=int(
                env.get("S2C_DESIGN_SYSTEM_MAX_BYTES", defaults.max_content_bytes)
            ),
            max_total_bytes=int(
                env.get("S2C_DESIGN_SYSTEMS_MAX_TOTAL_BYTES", defaults.max_total_bytes)
            ),
        )

    @property
    def max_body_bytes(self) -> int:
        """The largest request body a valid create or update can be."""
        return JSON_ESCAPE_FACTOR * (self.max_content_bytes + 4 * MAX_NAME_CHARS) + 4096


class DesignSystemError(Exception):
    """A request the store refuses; `status` is the HTTP status it maps to."""

    status = 400

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class InvalidDesignSystem(DesignSystemError):
    status = 400


class DesignSystemTooLarge(DesignSystemError):
    """Over a size or count limit."""

    status = 413


class DesignSystemNotFound(DesignSystemError):
    status = 404

    def __init__(self) -> None:
        super().__init__("Design system not found")


class CorruptStore(DesignSystemError):
    status = 500


class StorageUnavailable(DesignSystemError):
    """The disk refused a read or a write: 507 when it is full, else 503."""

    def __init__(self, detail: str, status: int) -> None:
        super().__init__(detail)
        self.status = status


@dataclass(frozen=True, slots=True)
class DesignSystem:
    id: str
    name: str
    content: str
    created_at: str
    updated_at: str

    def to_json(self) -> dict[str, str]:
        return {
            "id": self.id,
            "name": self.name,
            "content": self.content,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
        }

    @property
    def size(self) -> int:
        return _utf8_size(self.name) + _utf8_size(self.content)


@dataclass(frozen=True, slots=True)
class DesignSystemPatch:
    name: str | None = None
    content: str | None = None


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _utf8_size(text: str) -> int:
    # Stored text was checked on the way in; a hand-edited file may still hold a lone
    # surrogate, which must not turn a size check into a crash.
    return len(text.encode("utf-8", "surrogatepass"))


def _checked_text(label: str, value: str) -> int:
    """UTF-8 size of `value`; refuses lone surrogates (JSON `\ud800` escapes decode to
    them, and no file or response can carry one)."""
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidDesignSystem(
            f"Design system {label} contains a lone surrogate "
            f"(U+{ord(value[exc.start]):04X} at character {exc.start}); send valid Unicode"
        ) from None


def _checked_name(value: object) -> str:
    if value is None:
        raise InvalidDesignSystem("Design system name is required")
    if not isinstance(value, str):
        raise InvalidDesignSystem("Design system name must be a string")
    if len(value) > 4 * MAX_NAME_CHARS:  # before strip(): never scan a huge "name"
        raise InvalidDesignSystem(
            f"Design system name is too long: {len(value)} characters (max {MAX_NAME_CHARS})"
        )
    name = value.strip()
    if not name:
        raise InvalidDesignSystem("Design system name is required")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidDesignSystem(
            f"Design system name is too long: {len(name)} characters (max {MAX_NAME_CHARS})"
        )
    _checked_text("name", name)
    return name


def _checked_content(value: object, limits: DesignSystemLimits) -> str:
    if not isinstance(value, str):
        raise InvalidDesignSystem("Design system content must be a string")
    size = _checked_text("content", value)
    if size > limits.max_content_bytes:
        raise DesignSystemTooLarge(
            f"Design system content is too large: {size} bytes "
            f"(max {limits.max_content_bytes} bytes)"
        )
    return value


def parse_create(body: object, limits: DesignSystemLimits | None = None) -> tuple[str, str]:
    """(name, content) from a POST body; content may be omitted (an empty system)."""
    limits = limits or DesignSystemLimits()
    fields = _object(body)
    name = _checked_name(fields.get("name"))
    content = fields.get("content")
    return name, "" if content is None else _checked_content(content, limits)


def parse_patch(body: object, limits: DesignSystemLimits | None = None) -> DesignSystemPatch:
    """A PATCH body: absent and null fields are left unchanged, as with upstream's model."""
    limits = limits or DesignSystemLimits()
    fields = _object(body)
    name = fields.get("name")
    content = fields.get("content")
    return DesignSystemPatch(
        name=None if name is None else _checked_name(name),
        content=None if content is None else _checked_content(content, limits),
    )


def _object(body: object) -> Mapping[str, Any]:
    if not isinstance(body, dict):
        raise InvalidDesignSystem("Request body must be a JSON object")
    return body


def _check_room(
    systems: Sequence[DesignSystem], limits: DesignSystemLimits, old: int, new: int
) -> None:
    """Refuses a change that would grow the total past the limit. A change that does not
    grow it is let through, so a file over a lowered limit can still be cut down."""
    total = sum(s.size for s in systems)
    after = total - old + new
    if new > old and after > limits.max_total_bytes:
        raise DesignSystemTooLarge(
            f"Design systems would take {after} bytes in total "
            f"(max {limits.max_total_bytes} bytes); delete or shorten one first"
        )


_Stamp = tuple[int, int, int]  # (inode, size, mtime_ns) of the file as last seen


class DesignSystemStore:
    def __init__(
        self,
        data_dir: Path,
        *,
        clock: Clock = _utc_now,
        limits: DesignSystemLimits | None = None,
        health: StorageHealth | None = None,
    ) -> None:
        self.path = data_dir / FILE_NAME
        self.limits = limits or DesignSystemLimits()
        self.health = health or StorageHealth(STORE_NAME)
        self._clock = clock
        self._lock = asyncio.Lock()
        self._cached: tuple[_Stamp, list[DesignSystem]] | None = None
        # Each system's JSON, kept between writes: a change encodes only what changed,
        # the rest of the file is a join of bytes already made.
        self._encoded: dict[DesignSystem, bytes] = {}

    async def list_all(self) -> list[DesignSystem]:
        async with self._lock:
            return await self._load()

    async def create(self, name: str, content: str) -> DesignSystem:
        async with self._lock:
            systems = await self._load()
            if len(systems) >= self.limits.max_count:
                raise DesignSystemTooLarge(
                    f"Too many design systems: {len(systems)} stored "
                    f"(max {self.limits.max_count}); delete one first"
                )
            now = self._timestamp()
            created = DesignSystem(str(uuid.uuid4()), name, content, now, now)
            _check_room(systems, self.limits, 0, created.size)
            await self._store([*systems, created])
            return created

    async def update(self, system_id: str, patch: DesignSystemPatch) -> DesignSystem:
        async with self._lock:
            systems = await self._load()
            index = _index_of(systems, system_id)
            old = systems[index]
            updated = DesignSystem(
                id=old.id,
                name=old.name if patch.name is None else patch.name,
                content=old.content if patch.content is None else patch.content,
                created_at=old.created_at,
                updated_at=self._timestamp(),
            )
            _check_room(systems, self.limits, old.size, updated.size)
            await self._store([*systems[:index], updated, *systems[index + 1 :]])
            return updated

    async def delete(self, system_id: str) -> None:
        async with self._lock:
            systems = await self._load()
            index = _index_of(systems, system_id)
            await self._store([*systems[:index], *systems[index + 1 :]])

    async def probe(self) -> bool:
        """While failing, checks that the file can be read and the directory written
        (a temporary file, removed); returns whether storage is healthy now."""
        if self.health.ok:
            return True
        async with self._lock:
            try:
                await asyncio.to_thread(self._probe)
            except (OSError, StorageUnavailable):
                return False
            self.health.succeeded()
            return True

    def _timestamp(self) -> str:
        return self._clock().astimezone(UTC).isoformat()

    async def _load(self) -> list[DesignSystem]:
        # The caller gets its own list: the cached one is never mutated in place.
        try:
            stamp, systems = await asyncio.to_thread(self._read_if_changed, self._cached)
        except StorageUnavailable as exc:
            self.health.failed("read", exc.__cause__ or exc)
            raise
        self._cached = (stamp, systems)
        return list(systems)

    async def _store(self, systems: list[DesignSystem]) -> None:
        try:
            stamp = await asyncio.to_thread(self._write, systems)
        except OSError as exc:
            self._cached = None
            self.health.failed("write", exc)
            status = 507 if exc.errno in _FULL else 503
            raise StorageUnavailable(
                f"Design systems cannot be saved: {describe(exc)}. "
                f"Check that the data directory {self.path.parent} is writable and has room.",
                status,
            ) from exc
        self._cached = (stamp, systems)
        self.health.succeeded()

    # ------------------------------------------------------------ worker threads

    def _stamp(self) -> _Stamp | None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._unreadable(exc) from exc
        return (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def _read_if_changed(
        self, cached: tuple[_Stamp, list[DesignSystem]] | None
    ) -> tuple[_Stamp, list[DesignSystem]]:
        stamp = self._stamp()
        if stamp is None:
            return (0, 0, 0), []
        if cached is not None and cached[0] == stamp:
            return cached
        return stamp, self._read()

    def _read(self) -> list[DesignSystem]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise self._unreadable(exc) from exc
        try:
            raw = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise self._corrupt(f"cannot be read ({exc})") from exc
        except json.JSONDecodeError as exc:
            raise self._corrupt(f"is not valid JSON ({exc})") from exc
        if not isinstance(raw, list):
            raise self._corrupt("does not hold a JSON list")
        return [self._entry(item, position) for position, item in enumerate(raw)]

    def _entry(self, item: object, position: int) -> DesignSystem:
        keys = ("id", "name", "content", "createdAt", "updatedAt")
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in keys):
            raise self._corrupt(f"entry {position} is not a design system with string {keys}")
        return DesignSystem(*(str(item[k]) for k in keys))

    def _corrupt(self, reason: str) -> CorruptStore:
        # Refusing (rather than starting afresh) keeps the next write from erasing systems
        # the user could still recover by fixing the file.
        return CorruptStore(
            f"The design systems file {self.path} {reason}; fix or remove it to continue"
        )

    def _unreadable(self, exc: OSError) -> StorageUnavailable:
        return StorageUnavailable(
            f"The design systems file {self.path} cannot be read: {describe(exc)}", 503
        )

    def _write(self, systems: list[DesignSystem]) -> _Stamp:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        encoded = {s: self._encoded.get(s) or _encode(s) for s in systems}
        self._encoded = encoded
        # One system per line: still the JSON list upstream reads.
        data = b"[\n" + b",\n".join(encoded[s] for s in systems) + b"\n]\n"
        fd, tmp_name = tempfile.mkstemp(
            dir=self.path.parent, prefix=f".{FILE_NAME}.", suffix=".tmp"
        )
        try:
            with os.fdopen(fd, "wb") as tmp:
                tmp.write(data)
                tmp.flush()
                os.fsync(tmp.fileno())
            os.replace(tmp_name, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
            raise
        stamp = self._stamp()
        assert stamp is not None
        return stamp

    def _probe(self) -> None:
        with contextlib.suppress(CorruptStore):  # bad data, not bad storage
            self._read_if_changed(None)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(
            dir=self.path.parent, prefix=f".{FILE_NAME}.", suffix=".probe"
        )
        try:
            # Some bytes, synced: an empty file needs no room and would pass on a full disk.
            with os.fdopen(fd, "wb") as probe:
                probe.write(b"probe\n" * 512)
                probe.flush()
                os.fsync(probe.fileno())
        finally:
            os.unlink(tmp_name)


def _encode(system: DesignSystem) -> bytes:
    # surrogatepass: a lone surrogate can only come from a hand-edited file; writing it
    # back as it was beats refusing every later change.
    return json.dumps(system.to_json(), ensure_ascii=False).encode("utf-8", "surrogatepass")


def _index_of(systems: Sequence[DesignSystem], system_id: str) -> int:
    for index, system in enumerate(systems):
        if system.id == system_id:
            return index
    raise DesignSystemNotFound()
