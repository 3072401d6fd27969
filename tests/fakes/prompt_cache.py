"""Prompt-cache emulation for the fake model servers, as each provider documents it.

Tokens are approximated as characters / 4 of a canonical rendering of the request (the
same rule for every fake, so runs compare); an image counts `IMAGE_TOKENS` whatever its
encoding, since providers bill images by size, not by base64 length. What each
provider states and what these classes do is in docs/provider-wire-formats.md
("Prompt caching").

- `PrefixCache` (OpenAI, Gemini implicit): cached = the longest prefix of the rendered
  request that an earlier request under the same key started with, counted only from
  `minimum` tokens on and rounded down to `step`-token increments past it.
- `BreakpointCache` (Anthropic): entries are written at `cache_control` breakpoints only
  (prefixes of at least `minimum` tokens); a breakpoint reads the longest entry found at
  a block boundary within the 20 blocks before it.

An entry is readable by every later request, even one that arrived while the first was
still streaming; the real caches need the first request's prefill to have run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 1_000
_BASE64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_")
_LOOKBACK_BLOCKS = 20


def tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN


def _is_media(key: str, value: str) -> bool:
    if value.startswith("data:") and len(value) > 256:
        return True
    return key == "data" and len(value) > 256 and set(value[:512].encode()) <= _BASE64


def canonical(value: Any, key: str = "") -> Any:
    """`value` with `cache_control` dropped (it is not part of the prompt) and every
    image replaced by a stand-in of `IMAGE_TOKENS` tokens that keeps its identity."""
    if isinstance(value, dict):
        return {k: canonical(v, k) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    if isinstance(value, str) and _is_media(key, value):
        digest = hashlib.sha256(value.encode()).hexdigest()[:16]
        return f"<image {digest}>".ljust(IMAGE_TOKENS * CHARS_PER_TOKEN, ".")
    return value


def render(value: Any) -> str:
    return json.dumps(canonical(value), ensure_ascii=False, sort_keys=True)


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix; slices compare at C speed, so bisect on them."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(frozen=True, slots=True)
class PrefixHit:
    total: int  # input tokens of the request, cached ones included
    cached: int


@dataclass(slots=True)
class PrefixCache:
    minimum: int = 1024
    step: int = 1
    _seen: dict[str, list[str]] = field(default_factory=dict)

    def lookup(self, key: str, text: str) -> PrefixHit:
        """The cached tokens of a request rendered as `text`; then remembers it."""
        seen = self._seen.setdefault(key, [])
        longest = max((_common_prefix(text, old) for old in seen), default=0)
        seen.append(text)
        common = tokens(text[:longest])
        cached = 0
        if common >= self.minimum:
            cached = self.minimum + (common - self.minimum) // self.step * self.step
        return PrefixHit(tokens(text), cached)


@dataclass(frozen=True, slots=True)
class Block:
    text: str
    breakpoint: bool = False


@dataclass(frozen=True, slots=True)
class BreakpointHit:
    input: int  # after the last written breakpoint: neither read nor written
    cache_read: int
    cache_write: int


@dataclass(slots=True)
class BreakpointCache:
    minimum: int = 1024
    _entries: set[str] = field(default_factory=set)

    def lookup(self, blocks: Sequence[Block]) -> BreakpointHit:
        ends: list[int] = []  # tokens up to the end of each block
        digests: list[str] = []
        running = hashlib.sha256()
        chars = 0
        for block in blocks:
            running.update(block.text.encode())
            running.update(b"\0")
            chars += len(block.text)
            ends.append(chars // CHARS_PER_TOKEN)
            digests.append(running.hexdigest())
        marks = [i for i, block in enumerate(blocks) if block.breakpoint]
        read = 0
        for mark in marks:
            for j in range(mark, max(-1, mark - _LOOKBACK_BLOCKS), -1):
                if digests[j] in self._entries:
                    read = max(read, ends[j])
                    break
        written = 0
        for mark in marks:
            if ends[mark] >= self.minimum:
                self._entries.add(digests[mark])
                written = max(written, ends[mark])
        write = max(0, written - read)
        total = ends[-1] if ends else 0
        return BreakpointHit(total - read - write, read, write)


# ---- each API's prompt, in the order the API reads it ---------------------------------

_ROUTING_CHARS = 256 * CHARS_PER_TOKEN


def openai_lookup(cache: PrefixCache, body: dict[str, Any], conversation: str) -> PrefixHit:
    """OpenAI (Responses `input`, Chat Completions `messages`): instructions, tools, then
    the conversation. Without `prompt_cache_key` the first 256 tokens pick the cache."""
    items = body.get(conversation)
    head = render(body.get("instructions")) + render(body.get("tools"))
    text = head + "".join(render(item) for item in (items if isinstance(items, list) else []))
    key = body.get("prompt_cache_key")
    if not isinstance(key, str) or not key:
        key = "prefix:" + text[:_ROUTING_CHARS]
    return cache.lookup(key, text)


def openai_usage_frame(frame: str, hit: PrefixHit) -> str:
    """An SSE record with the emulated input counts in its usage, if it carries usage."""
    head, sep, data = frame.partition("data: ")
    if not sep or data.startswith("[DONE]"):
        return frame
    payload = json.loads(data)
    if payload.get("type") == "response.completed":
        usage = payload["response"]["usage"]
        usage["input_tokens"] = hit.total
        usage["input_tokens_details"]["cached_tokens"] = hit.cached
        usage["total_tokens"] = hit.total + usage["output_tokens"]
    elif isinstance(payload.get("usage"), dict):
        usage = payload["usage"]
        usage["prompt_tokens"] = hit.total
        usage["prompt_tokens_details"] = {"cached_tokens": hit.cached}
        usage["total_tokens"] = hit.total + usage["completion_tokens"]
    else:
        return frame
    return f"{head}data: {json.dumps(payload, separators=(',', ':'))}\n\n"


def anthropic_blocks(body: dict[str, Any]) -> list[Block]:
    """Anthropic: tools, system, then every message's content blocks; a block with
    `cache_control` is a breakpoint, and top-level `cache_control` marks the last one."""
    blocks: list[Block] = []

    def add(value: Any, prefix: str = "") -> None:
        marked = isinstance(value, dict) and "cache_control" in value
        blocks.append(Block(prefix + render(value), marked))

    for tool in body.get("tools") or ():
        add(tool)
    system = body.get("system")
    for part in [{"type": "text", "text": system}] if isinstance(system, str) else system or ():
        add(part)
    for message in body.get("messages") or ():
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for index, part in enumerate(parts or ()):
            add(part, f"{message.get('role')}:" if index == 0 else "")
    if isinstance(body.get("cache_control"), dict) and blocks:
        blocks[-1] = Block(blocks[-1].text, True)
    return blocks


def gemini_text(body: dict[str, Any]) -> str:
    """Gemini: the system instruction, tools, then the contents, in either key spelling."""
    system = body.get("systemInstruction", body.get("system_instruction"))
    contents = body.get("contents") or []
    return render(system) + render(body.get("tools")) + "".join(render(c) for c in contents)
