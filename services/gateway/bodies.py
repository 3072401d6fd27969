"""Reading an HTTP body (a request's or a fetched asset's) without holding more than a
limit of it."""

from __future__ import annotations

from aiohttp import StreamReader

_CHUNK = 64 * 1024


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
