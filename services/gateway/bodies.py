"""Reading an HTTP body (a request's or a fetched asset's) without holding more than a
limit of it, and parsing a JSON body or frame without stalling the event loop."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import StreamReader

from services.common.text import clean_json

_CHUNK = 64 * 1024
# A JSON text longer than this is parsed in a worker thread: a few MB of small values
# (a million one-byte files, say) take seconds to parse and walk, and every socket and
# request of the gateway would wait that long.
PARSE_ON_LOOP_BYTES = 256 * 1024


def _parse(raw: str | bytes, clean: bool) -> Any:
    value = json.loads(raw)
    return clean_json(value) if clean else value


async def parse_json(raw: str | bytes, *, clean: bool = False) -> Any:
    """`json.loads(raw)` (with `clean`, `clean_json` of it), off the loop when `raw` is
    large; raises as json.loads does."""
    if len(raw) <= PARSE_ON_LOOP_BYTES:
        return _parse(raw, clean)
    return await asyncio.to_thread(_parse, raw, clean)


async def read_capped(content: StreamReader, declared: int | None, limit: int) -> bytes | None:
    """The body, or None once it is known to exceed `limit` bytes: at once from the
    declared length, else as soon as that much has arrived (never buffered whole).

    Counted as delivered, i.e. after decompression, so a small gzip bomb cannot get past
    the limit."""
    if (declared or 0) > limit:
        return None
    data = bytearray()
    async for chunk in content.iter_chunked(_CHUNK):
        data += chunk
        if len(data) > limit:
            return None
    return bytes(data)
