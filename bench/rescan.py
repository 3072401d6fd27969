"""Upstream's live preview, written from its description (docs/browser-protocol.md,
setCode): the whole argument buffer re-scanned on every delta. The preview bench's CPU
baseline (bench/preview.py, table 1)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Final

UPSTREAM_STEP: Final = 40  # upstream sends the whole file again on every 40 new characters


CONTENT_KEY: Final = re.compile(r'"content"\s*:\s*"')
STRING_BODY: Final = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
MANUAL_UNESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "/": "/"}


def rescan(pieces: Sequence[str], content_at: Callable[[str, int], str]) -> int:
    """Upstream's loop: on every delta append it, find `"content": "` in the whole buffer,
    decode the string from there (`content_at(buffer, start)`) and count a preview frame
    whenever it grew by a step since the last one."""
    buffer, sent, frames = "", -1, 0
    for piece in pieces:
        buffer += piece
        match = CONTENT_KEY.search(buffer)
        if match is None:
            continue
        content = content_at(buffer, match.end())
        if sent < 0 or len(content) - sent >= UPSTREAM_STEP:
            sent, frames = len(content), frames + 1
    return frames


def walked_content(buffer: str, start: int) -> str:
    """Walk character by character to the closing unescaped quote (or the end), drop a
    dangling backslash, JSON-decode (falling back to manual unescaping)."""
    end = start
    escaped = False
    for ch in buffer[start:]:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            break
        end += 1
    raw = buffer[start:end]
    if raw.endswith("\\") and not raw.endswith("\\\\"):
        raw = raw[:-1]
    try:
        decoded: str = json.loads(f'"{raw}"')
    except json.JSONDecodeError:
        return re.sub(r"\\(.)", lambda m: MANUAL_UNESCAPES.get(m[1], m[1]), raw)
    return decoded


def matched_content(buffer: str, start: int) -> str:
    """The same string found by a regex (C speed)."""
    raw = buffer[start : STRING_BODY.match(buffer, start).end()]  # type: ignore[union-attr]
    if raw.endswith("\\"):
        raw = raw[:-1]
    try:
        decoded: str = json.loads(f'"{raw}"')
    except json.JSONDecodeError:
        return raw
    return decoded


def run_rescan_baseline(pieces: Sequence[str]) -> int:
    """Upstream's way (docs/browser-protocol.md, setCode), written from its description:
    the whole buffer re-scanned and decoded on every delta."""
    return rescan(pieces, walked_content)


def run_rescan_regex(pieces: Sequence[str]) -> int:
    """The same re-scan with the string walk done by a regex: still quadratic."""
    return rescan(pieces, matched_content)
