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
# The most values a large JSON text may hold. json.loads holds the GIL from start to end,
# so in a thread too it stops the loop for as long as it runs, about 1 s per million
# small values; what any route or params frame takes holds a few thousand.
MAX_JSON_VALUES = 100_000


class TooManyValues(ValueError):
    """A JSON text with more values than `MAX_JSON_VALUES`; the message says so."""

    def __init__(self) -> None:
        super().__init__(f"the JSON holds more than {MAX_JSON_VALUES} values, the most it may")


def _parse(raw: str | bytes, clean: bool) -> Any:
    value = json.loads(raw)
    return clean_json(value) if clean else value


def _bounded_parse(raw: str | bytes, clean: bool) -> Any:
    text = raw.decode("utf-8", "surrogatepass") if isinstance(raw, bytes) else raw
    if _marks(text, 0, len(text)) >= MAX_JSON_VALUES and _marks_outside_strings(text):
        raise TooManyValues()
    return _parse(raw, clean)


def _marks(text: str, start: int, stop: int) -> int:
    """The marks of a value (`,:[{`: every value but the first follows one) in a slice."""
    return sum(text.count(mark, start, stop) for mark in ",:[{")


def _marks_outside_strings(text: str) -> bool:
    """Whether `text` holds MAX_JSON_VALUES marks outside its strings. Linear: every
    search starts where the last one of its kind stopped (str.find and str.count, at C
    speed), and Python steps once per string and per escape, so the loop gets the GIL
    between them."""
    count = at = 0
    backslash = text.find("\\")
    while True:
        quote = text.find('"', at)  # a string's opening quote
        count += _marks(text, at, len(text) if quote < 0 else quote)
        if count >= MAX_JSON_VALUES:
            return True
        if quote < 0:
            return False
        at = quote + 1
        if 0 <= backslash < at:
            backslash = text.find("\\", at)
        quote = text.find('"', at)  # its closing quote, unless escaped
        while 0 <= backslash < quote:
            at = backslash + 2  # the escaped character (maybe a quote) is the string's
            backslash = text.find("\\", at)
            if quote < at:
                quote = text.find('"', at)
        if quote < 0:
            return False
        at = quote + 1


async def parse_json(raw: str | bytes, *, clean: bool = False) -> Any:
    """`json.loads(raw)` (with `clean`, `clean_json` of it); a large `raw` is parsed off
    the loop and only if it holds at most MAX_JSON_VALUES values (else TooManyValues).
    Raises as json.loads does."""
    if len(raw) <= PARSE_ON_LOOP_BYTES:
        return _parse(raw, clean)
    return await asyncio.to_thread(_bounded_parse, raw, clean)


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
