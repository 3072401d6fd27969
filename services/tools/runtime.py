"""Routes tool calls to their handlers, with the checks every call shares.

Checks, in order: unparsable arguments (INVALID_JSON), unknown tool, image generation
disabled, then the arguments against the tool's canonical JSON Schema (see
`services.tools.validation` for how that defers to the handlers' own upstream checks).
Each execution then runs under its tool's time limit; running out cancels the handler.

Calls are idempotent by tool-call id: the outcome of a call is remembered (bounded
LRU) under its id plus a digest of everything it read, so a retried RPC gets the
same answer without running the tool twice, and a duplicate arriving while the
first is still running waits for that same execution.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import math
from collections import OrderedDict
from collections.abc import Collection, Mapping
from typing import Any

from services.common.tool_types import FileState, ToolCall
from services.tools.definitions import TOOL_DEFINITIONS, ToolDefinition
from services.tools.settings import DEFAULT_TOOL_TIMEOUT_S, DEFAULT_TOOL_TIMEOUTS_S
from services.tools.types import ToolContext, ToolFlags, ToolHandler, ToolOutcome, failure
from services.tools.validation import check_arguments, unsupported_keywords

logger = logging.getLogger(__name__)

DEFAULT_CACHE_SIZE = 1024
# Screenshot outcomes carry megabytes of PNG; a count bound alone could pin gigabytes.
DEFAULT_CACHE_MAX_BYTES = 256 * 1024 * 1024

_Key = tuple[str, bytes]


@dataclasses.dataclass(slots=True)
class _InFlight:
    task: asyncio.Task[ToolOutcome]
    waiters: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class _Cached:
    outcome: ToolOutcome
    size: int


class ToolRuntime:
    def __init__(
        self,
        handlers: Mapping[str, ToolHandler],
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
        cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
        timeouts_s: Mapping[str, float] = DEFAULT_TOOL_TIMEOUTS_S,
        default_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
    ) -> None:
        self._handlers = dict(handlers)
        self._schemas = {d.name: d.input_schema for d in TOOL_DEFINITIONS}
        for name, schema in self._schemas.items():
            unknown = unsupported_keywords(schema)
            if unknown:
                # Refuse to start rather than let a definition promise checks nobody makes.
                raise ValueError(f"{name}: schema uses unsupported keywords {sorted(unknown)}")
        for name, limit in {**timeouts_s, "(default)": default_timeout_s}.items():
            if not (math.isfinite(limit) and limit > 0):
                raise ValueError(f"timeout for {name} must be a positive number of seconds")
        self._timeouts_s = dict(timeouts_s)
        self._default_timeout_s = default_timeout_s
        self._cache_size = cache_size
        self._cache_max_bytes = cache_max_bytes
        self._cache: OrderedDict[_Key, _Cached] = OrderedDict()
        self._cache_bytes = 0
        self._inflight: dict[_Key, _InFlight] = {}

    @property
    def tool_names(self) -> frozenset[str]:
        return frozenset(self._handlers)

    def timeout_for(self, name: str) -> float:
        """Seconds one execution of tool `name` may take before it is cancelled."""
        return self._timeouts_s.get(name, self._default_timeout_s)

    def definitions(self, flags: ToolFlags, available: Collection[str]) -> list[ToolDefinition]:
        """Canonical definitions, in canonical order, of the tools to offer.

        A tool is offered when this runtime has a handler for it, its name is in
        `available` (the caller's verdict on keys and probes, e.g. no Replicate key
        means no edit_image) and the request's flags enable it.
        """
        wanted = set(available)
        return [
            d
            for d in TOOL_DEFINITIONS
            if d.name in self._handlers and d.name in wanted and _flag_enabled(d.name, flags)
        ]

    async def execute(
        self, call: ToolCall, file: FileState | None, ctx: ToolContext
    ) -> ToolOutcome:
        """Run one call. Never raises for a bad call or a failing tool; cancellation propagates."""
        invalid = _invalid_json(call)
        if invalid is not None:
            return ToolOutcome(
                False,
                {"error": "Tool arguments were invalid JSON.", "INVALID_JSON": invalid},
                {"error": "Invalid JSON tool arguments"},
            )
        handler = self._handlers.get(call.name)
        if handler is None:
            return failure(f"Unknown tool: {call.name}", f"Unknown tool: {call.name}")
        if call.name == "generate_images" and not ctx.flags.image_generation_enabled:
            return failure("Image generation is disabled.", "Image generation disabled")
        rejected = check_arguments(call.name, self._schemas.get(call.name), call.arguments)
        if rejected is not None:
            return rejected
        if not call.id:
            # Without an id there is no promise to keep; identical calls may differ by design.
            return await _guarded(handler, call, file, ctx, self.timeout_for(call.name))
        key = (call.id, _digest(call, file, ctx))
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached.outcome
        return await self._join(key, handler, call, file, ctx)

    async def _join(
        self,
        key: _Key,
        handler: ToolHandler,
        call: ToolCall,
        file: FileState | None,
        ctx: ToolContext,
    ) -> ToolOutcome:
        entry = self._inflight.get(key)
        if entry is None:
            task = asyncio.create_task(
                _guarded(handler, call, file, ctx, self.timeout_for(call.name)),
                name=f"tool:{call.name}:{call.id}",
            )
            entry = _InFlight(task)
            self._inflight[key] = entry
            task.add_done_callback(lambda done: self._settle(key, entry, done))
        entry.waiters += 1
        try:
            # Shielded so one impatient caller cannot cancel the work another awaits.
            return await asyncio.shield(entry.task)
        finally:
            entry.waiters -= 1
            if entry.waiters == 0 and not entry.task.done():
                # Everyone who wanted this result has gone: stop paying for it, and
                # make sure a later retry starts afresh instead of joining a dying task.
                if self._inflight.get(key) is entry:
                    del self._inflight[key]
                entry.task.cancel()

    def _settle(self, key: _Key, entry: _InFlight, task: asyncio.Task[ToolOutcome]) -> None:
        if self._inflight.get(key) is entry:
            del self._inflight[key]
        if task.cancelled() or task.exception() is not None:
            return
        self._remember(key, task.result())

    def _remember(self, key: _Key, outcome: ToolOutcome) -> None:
        size = _approx_size(outcome)
        if size > self._cache_max_bytes or self._cache_size <= 0:
            return
        previous = self._cache.pop(key, None)
        if previous is not None:
            self._cache_bytes -= previous.size
        self._cache[key] = _Cached(outcome, size)
        self._cache_bytes += size
        while len(self._cache) > self._cache_size or self._cache_bytes > self._cache_max_bytes:
            _, evicted = self._cache.popitem(last=False)
            self._cache_bytes -= evicted.size


async def _guarded(
    handler: ToolHandler,
    call: ToolCall,
    file: FileState | None,
    ctx: ToolContext,
    timeout_s: float,
) -> ToolOutcome:
    # The deadline cancels the handler's task, so its awaits stop where they are; work it
    # handed to a thread (edit_file on large files) cannot be interrupted and finishes alone.
    deadline = asyncio.timeout(timeout_s)
    try:
        async with deadline:
            return await handler(call.arguments, file, ctx)
    except TimeoutError as exc:
        if not deadline.expired():
            # The tool's own timeout (a slow upstream API), not ours: an ordinary failure.
            return _failed(call, exc)
        logger.warning("tool %s timed out after %g s (call %s)", call.name, timeout_s, call.id)
        return failure(f"{call.name} timed out after {timeout_s:g} s", "Timed out")
    except Exception as exc:
        return _failed(call, exc)


def _failed(call: ToolCall, exc: Exception) -> ToolOutcome:
    # One broken tool call must not take the worker (or the generation) down:
    # the model sees the failure and can carry on.
    logger.error("tool %s failed (call %s)", call.name, call.id, exc_info=exc)
    return failure(f"{call.name} failed: {exc}", f"{call.name} failed")


def _flag_enabled(name: str, flags: ToolFlags) -> bool:
    if name == "generate_images":
        return flags.image_generation_enabled
    if name == "extract_assets":
        return flags.asset_extraction_enabled and flags.has_input_images
    if name == "compare_with_reference":
        return flags.has_input_images
    return True


def _invalid_json(call: ToolCall) -> str | None:
    if call.invalid_json is not None:
        return call.invalid_json
    # Providers that follow upstream mark unparsable arguments with this key instead.
    marker = call.arguments.get("INVALID_JSON")
    if marker is None:
        return None
    return marker if isinstance(marker, str) else json.dumps(marker)


def _digest(call: ToolCall, file: FileState | None, ctx: ToolContext) -> bytes:
    """A digest of everything a call reads, so a reused id with other input is not a hit."""
    h = hashlib.sha256()

    def put(text: str) -> None:
        # Length-prefixed so that field boundaries cannot be forged by content.
        data = text.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)

    put(call.name)
    put(json.dumps(call.arguments, sort_keys=True, separators=(",", ":"), default=repr))
    if file is None:
        put("")
    else:
        put("file")
        put(file.path)
        put(file.content)
    # Images by their hash: the key of a call names the same images the call does.
    for group in ([i.sha256 for i in ctx.input_images], ctx.option_codes):
        put(str(len(group)))
        for item in group:
            put(item)
    put(repr(ctx.flags))
    put(ctx.asset_base_url)
    for source, endpoint in sorted(ctx.credentials.providers.items()):
        put(source)
        put(endpoint.api_key)
        put(endpoint.base_url)
    return h.digest()


def _approx_size(outcome: ToolOutcome) -> int:
    size = _json_size(outcome.result) + _json_size(outcome.summary)
    if outcome.updated_file is not None:
        size += len(outcome.updated_file.content)
    for part in outcome.media:
        size += len(part.data or b"") + len(part.url or "")
    return size


def _json_size(value: Any) -> int:
    # Iterative: result payloads come from tools and may nest arbitrarily.
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str | bytes):
            total += len(item)
        elif isinstance(item, dict):
            total += 16 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            total += 8 * len(item)
            stack.extend(item)
        else:
            total += 8
    return total
