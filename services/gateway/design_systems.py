"""Design systems: named blocks of style guidance the UI keeps and sends with a generation.

Stored as one JSON list in `data_dir/design-systems.json`, the file upstream uses, so a
user's saved systems survive restarts. Every change is a read-modify-write of the whole
file under one lock, and the write goes to a temporary file renamed into place: two
concurrent requests can never lose each other's update, and a crash mid-write leaves the
previous file intact rather than a truncated one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

FILE_NAME = "design-systems.json"
MAX_NAME_CHARS = 200
MAX_CONTENT_BYTES = 200 * 1024

Clock = Callable[[], datetime]


class DesignSystemError(Exception):
    """A request the store refuses; `status` is the HTTP status it maps to."""

    status = 400

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class InvalidDesignSystem(DesignSystemError):
    status = 400


class DesignSystemNotFound(DesignSystemError):
    status = 404

    def __init__(self) -> None:
        super().__init__("Design system not found")


class CorruptStore(DesignSystemError):
    status = 500


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


@dataclass(frozen=True, slots=True)
class DesignSystemPatch:
    name: str | None = None
    content: str | None = None


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _checked_name(value: object) -> str:
    if value is None:
        raise InvalidDesignSystem("Design system name is required")
    if not isinstance(value, str):
        raise InvalidDesignSystem("Design system name must be a string")
    name = value.strip()
    if not name:
        raise InvalidDesignSystem("Design system name is required")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidDesignSystem(
            f"Design system name is too long: {len(name)} characters (max {MAX_NAME_CHARS})"
        )
    return name


def _checked_content(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidDesignSystem("Design system content must be a string")
    size = len(value.encode("utf-8"))
    if size > MAX_CONTENT_BYTES:
        raise InvalidDesignSystem(
            f"Design system content is too large: {size} bytes (max {MAX_CONTENT_BYTES} bytes)"
        )
    return value


def parse_create(body: object) -> tuple[str, str]:
    """(name, content) from a POST body; content may be omitted (an empty system)."""
    fields = _object(body)
    content = fields.get("content")
    return _checked_name(fields.get("name")), "" if content is None else _checked_content(content)


def parse_patch(body: object) -> DesignSystemPatch:
    """A PATCH body: absent and null fields are left unchanged, as with upstream's model."""
    fields = _object(body)
    name = fields.get("name")
    content = fields.get("content")
    return DesignSystemPatch(
        name=None if name is None else _checked_name(name),
        content=None if content is None else _checked_content(content),
    )


def _object(body: object) -> Mapping[str, Any]:
    if not isinstance(body, dict):
        raise InvalidDesignSystem("Request body must be a JSON object")
    return body


class DesignSystemStore:
    def __init__(self, data_dir: Path, *, clock: Clock = _utc_now) -> None:
        self.path = data_dir / FILE_NAME
        self._clock = clock
        self._lock = asyncio.Lock()

    async def list_all(self) -> list[DesignSystem]:
        async with self._lock:
            return await asyncio.to_thread(self._read)

    async def create(self, name: str, content: str) -> DesignSystem:
        async with self._lock:
            systems = await asyncio.to_thread(self._read)
            now = self._timestamp()
            created = DesignSystem(str(uuid.uuid4()), name, content, now, now)
            await asyncio.to_thread(self._write, [*systems, created])
            return created

    async def update(self, system_id: str, patch: DesignSystemPatch) -> DesignSystem:
        async with self._lock:
            systems = await asyncio.to_thread(self._read)
            index = _index_of(systems, system_id)
            old = systems[index]
            updated = DesignSystem(
                id=old.id,
                name=old.name if patch.name is None else patch.name,
                content=old.content if patch.content is None else patch.content,
                created_at=old.created_at,
                updated_at=self._timestamp(),
            )
            systems[index] = updated
            await asyncio.to_thread(self._write, systems)
            return updated

    async def delete(self, system_id: str) -> None:
        async with self._lock:
            systems = await asyncio.to_thread(self._read)
            del systems[_index_of(systems, system_id)]
            await asyncio.to_thread(self._write, systems)

    def _timestamp(self) -> str:
        return self._clock().astimezone(UTC).isoformat()

    def _read(self) -> list[DesignSystem]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            raise self._corrupt(f"cannot be read ({exc})") from exc
        try:
            raw = json.loads(text)
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

    def _write(self, systems: list[DesignSystem]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps([s.to_json() for s in systems], ensure_ascii=False, indent=2)
        fd, tmp_name = tempfile.mkstemp(
            dir=self.path.parent, prefix=f".{FILE_NAME}.", suffix=".tmp"
        )
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as tmp:
                tmp.write(payload)
                tmp.flush()
                os.fsync(tmp.fileno())
            os.replace(tmp_name, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
            raise


def _index_of(systems: list[DesignSystem], system_id: str) -> int:
    for index, system in enumerate(systems):
        if system.id == system_id:
            return index
    raise DesignSystemNotFound()
