"""The fakes' prompt-cache emulation (tests/fakes/prompt_cache.py), unit by unit."""

from __future__ import annotations

from tests.fakes.prompt_cache import (
    IMAGE_TOKENS,
    Block,
    BreakpointCache,
    PrefixCache,
    anthropic_blocks,
    canonical,
    tokens,
)

K = 4 * 1024  # characters of 1,024 tokens


def test_prefix_cache_counts_from_the_minimum_in_steps() -> None:
    cache = PrefixCache(minimum=1024, step=128)
    first = cache.lookup("key", "a" * (K + 4 * 300))
    assert (first.total, first.cached) == (1324, 0)
    # 1,324 common tokens: 1,024 and two whole 128-token steps.
    again = cache.lookup("key", "a" * (K + 4 * 300) + "b" * 4000)
    assert again.cached == 1024 + 256
    assert again.total == 1324 + 1000


def test_prefix_cache_needs_the_minimum_and_the_same_key() -> None:
    cache = PrefixCache(minimum=1024, step=128)
    cache.lookup("key", "a" * (K - 4))
    assert cache.lookup("key", "a" * (K - 4) + "tail").cached == 0  # 1,023 common tokens
    cache.lookup("key", "x" * 2 * K)
    assert cache.lookup("other", "x" * 2 * K).cached == 0
    assert cache.lookup("key", "x" * 2 * K).cached == 2048


def test_prefix_cache_stops_at_the_first_difference() -> None:
    cache = PrefixCache(minimum=1024, step=1)
    cache.lookup("k", "a" * 2 * K + "OLD" + "z" * K)
    assert cache.lookup("k", "a" * 2 * K + "NEW" + "z" * K).cached == 2048


def test_breakpoint_cache_reads_and_writes_only_at_breakpoints() -> None:
    cache = BreakpointCache(minimum=1024)
    stable, tail = "s" * 2 * K, "t" * K
    first = cache.lookup([Block(stable, True), Block(tail, True)])
    assert (first.input, first.cache_read, first.cache_write) == (0, 0, 3072)
    # Same prefix, a new tail after the last breakpoint: read up to it, the rest is input.
    second = cache.lookup([Block(stable, True), Block(tail, True), Block("n" * 400)])
    assert (second.input, second.cache_read, second.cache_write) == (100, 3072, 0)
    # A change before the first breakpoint: nothing to read.
    third = cache.lookup([Block("S" + stable[1:], True), Block(tail)])
    assert (third.cache_read, third.cache_write, third.input) == (0, 2048, 1024)


def test_breakpoint_cache_minimum_and_lookback() -> None:
    cache = BreakpointCache(minimum=1024)
    small = cache.lookup([Block("s" * 400, True)])
    assert (small.input, small.cache_write) == (100, 0)  # under 1,024 tokens: not cached
    cache.lookup([Block("b" * K, True)])
    # Later requests mark only their end; the entry is found by looking back from it.
    blocks = [Block("b" * K)] + [Block(f"{i:04d}") for i in range(30)]
    far = cache.lookup([*blocks, Block("end", True)])
    assert far.cache_read == 0  # 31 blocks back: beyond the 20-block lookback
    near = cache.lookup([*blocks[:10], Block("end", True)])
    assert near.cache_read == 1024


def test_images_count_a_fixed_size_and_cache_control_is_not_content() -> None:
    shot = "data:image/png;base64," + "A" * 90_000
    rendered = canonical({"type": "image_url", "image_url": shot, "cache_control": {}})
    assert tokens(rendered["image_url"]) == IMAGE_TOKENS
    assert "cache_control" not in rendered
    assert canonical({"data": "B" * 5000})["data"] != canonical({"data": "C" * 5000})["data"]


def test_anthropic_blocks_follow_tools_system_messages_and_mark_breakpoints() -> None:
    body = {
        "tools": [{"name": "edit_file"}],
        "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
        ],
    }
    blocks = anthropic_blocks(body)
    assert [b.breakpoint for b in blocks] == [False, True, False, False]
    assert "edit_file" in blocks[0].text
    assert blocks[2].text.startswith("user:")
    # A string content and its one text block are the same prompt.
    spelt = {**body, "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]}
    assert anthropic_blocks(spelt)[2] == blocks[2]
    assert anthropic_blocks({**body, "cache_control": {"type": "ephemeral"}})[-1].breakpoint
