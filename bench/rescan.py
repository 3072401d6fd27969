"""Upstream's live preview, written from its description (docs/browser-protocol.md,
setCode): the whole argument buffer re-scanned on every delta. The preview bench's CPU
baseline (bench/preview.py, table 1)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Final

UPSTREAM_STEP: Final = 40  # upstream sends the whole file again on every 40 new characters


def run_rescan_baseline(pieces: Sequence[str]) -> int:
    """Upstream's way (docs/browser-protocol.md, setCode), written from its description.

    On every delta: append it, find `"content": "` in the whole buffer, walk character by
    character to the closing unescaped quote (or the end), drop a dangling backslash,
    JSON-decode (falling back to manual unescaping), and compare the length with what was
    last previewed.
    """
    key = re.compile(r'"content"\s*:\s*"')
    manual = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "/": "/"}
    buffer, sent, frames = "", -1, 0
    for piece in pieces:
        buffer += piece
        match = key.search(buffer)
        if match is None:
            continue
        start = end = match.end()
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
            content = json.loads(f'"{raw}"')
        except json.JSONDecodeError:
            content = re.sub(r"\\(.)", lambda m: manual.get(m[1], m[1]), raw)
        if sent < 0 or len(content) - sent >= UPSTREAM_STEP:
            sent, frames = len(content), frames + 1
    return frames


def run_rescan_regex(pieces: Sequence[str]) -> int:
    """The same re-scan with the string walk done by a regex (C speed): still quadratic."""
    key = re.compile(r'"content"\s*:\s*"')
    body = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
    buffer, sent, frames = "", -1, 0
    for piece in pieces:
        buffer += piece
        match = key.search(buffer)
        if match is None:
            continue
        start = match.end()
        raw = buffer[start : body.match(buffer, start).end()]  # type: ignore[union-attr]
        if raw.endswith("\\"):
            raw = raw[:-1]
        try:
            content = json.loads(f'"{raw}"')
        except json.JSONDecodeError:
            content = raw
        if sent < 0 or len(content) - sent >= UPSTREAM_STEP:
            sent, frames = len(content), frames + 1
    return frames
