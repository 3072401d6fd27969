"""ArgumentScanner: streamed tool arguments decoded like json.loads, and rebuilt from the
event log's merged code deltas."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.agent.argscan import ArgumentScanner, Fragment
from services.agent.eventlog import EventLog
from services.agent.events import CodeDelta, GenerationComplete

WATCHED = ("path", "content")


def apply(fragments: Iterable[Fragment]) -> dict[str, str]:
    """What a consumer rebuilds from the fragments (offset < length means replace)."""
    values: dict[str, str] = {}
    for fragment in fragments:
        current = values.get(fragment.key, "")
        assert 0 <= fragment.offset <= len(current)
        values[fragment.key] = current[: fragment.offset] + fragment.text
    return values


def scan(
    chunks: Iterable[str], keys: Sequence[str] = WATCHED
) -> tuple[ArgumentScanner, list[Fragment]]:
    scanner = ArgumentScanner(keys)
    fragments: list[Fragment] = []
    for chunk in chunks:
        fragments += scanner.feed(chunk)
    return scanner, fragments


def split_at(text: str, cuts: Iterable[int]) -> list[str]:
    bounds = [0, *sorted(set(cuts)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def expected(doc: str) -> dict[str, str]:
    parsed = json.loads(doc)
    return {k: v for k, v in parsed.items() if k in WATCHED and isinstance(v, str)}


def check_all_chunkings(doc: str) -> None:
    """Every split into two chunks, and one-character chunks, decode like json.loads."""
    want = expected(doc)
    for cut in range(len(doc) + 1):
        scanner, fragments = scan([doc[:cut], doc[cut:]])
        assert not scanner.failed, (cut, scanner.error)
        assert apply(fragments) == want, cut
    scanner, fragments = scan(doc)
    assert scanner.complete
    assert apply(fragments) == want
    for key in WATCHED:
        assert scanner.value(key) == want.get(key)


# -- random documents ----------------------------------------------------------------------

# Characters that stress the decoder: JSON specials, controls, line separators, astral
# characters, and lone or paired surrogates (json.dumps writes these as escapes that
# json.loads joins back into one character).
TRICKY = st.sampled_from(
    [
        *('"', "\\", "/", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f", "\u2028"),
        *("é", "€", "😀", "\U0010ffff", "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00"),
    ]
)
TEXT = st.text(st.one_of(st.characters(), TRICKY), max_size=60)
KEY_TEXT = st.one_of(st.sampled_from(["content", "path", "a", "é", "con\\tent"]), TEXT)
SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)


def any_json(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(KEY_TEXT, inner, max_size=4),
        ),
        max_leaves=12,
    )


def encode_string(text: str, rng: random.Random) -> str:
    """A JSON string literal for `text`, each character spelled one of its valid ways."""
    out = ['"']
    for ch in text:
        cp = ord(ch)
        choice = rng.random()
        simple = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b"}
        if ch in simple and choice < 0.7:
            out.append(simple[ch])
        elif ch == "/" and choice < 0.5:
            out.append("\\/")
        elif cp >= 0x20 and ch not in '"\\' and choice < 0.6:
            out.append(ch)
        elif cp > 0xFFFF:
            cp -= 0x10000
            high, low = 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)
            out.append(
                f"\\u{high:04x}\\u{low:04X}" if choice < 0.8 else f"\\u{high:04X}\\u{low:04x}"
            )
        else:
            out.append(f"\\u{cp:04x}" if rng.random() < 0.5 else f"\\u{cp:04X}")
    out.append('"')
    return "".join(out)


def encode(value: Any, rng: random.Random) -> str:
    """JSON text with random spellings and random whitespace between tokens."""

    def ws() -> str:
        return "".join(rng.choice(" \t\n\r") for _ in range(rng.choice((0, 0, 0, 1, 2))))

    if isinstance(value, str):
        return encode_string(value, rng)
    if isinstance(value, dict):
        items = [
            f"{ws()}{encode_string(k, rng)}{ws()}:{ws()}{encode(v, rng)}{ws()}"
            for k, v in value.items()
        ]
        return "{" + ",".join(items) + ws() + "}"
    if isinstance(value, list):
        return "[" + ",".join(f"{ws()}{encode(v, rng)}{ws()}" for v in value) + ws() + "]"
    return json.dumps(value)


# Extra keys, including nested objects and arrays that hold "content" and "path" too.
# Built once: strategies built inside each draw were most of the property tests' time.
EXTRA_KEYS = st.one_of(TEXT, st.sampled_from(["contents", "Content", "pat", "x"])).filter(
    lambda k: k not in WATCHED
)
EXTRA_VALUES = any_json(SCALAR)


@st.composite
def documents(draw: st.DrawFn) -> str:
    """A create_file-like argument object: watched keys among extra keys, in any order."""
    entries: list[tuple[str, Any]] = []
    if draw(st.booleans()):
        entries.append(("content", draw(TEXT)))
    if draw(st.booleans()):
        entries.append(("path", draw(TEXT)))
    for _ in range(draw(st.integers(0, 3))):
        entries.append((draw(EXTRA_KEYS), draw(EXTRA_VALUES)))
    entries = draw(st.permutations(entries))
    rng = draw(st.randoms(use_true_random=False))
    style = draw(st.sampled_from(["dumps-ascii", "dumps-unicode", "random"]))
    obj = dict(entries)
    if style == "random":
        return encode(obj, rng)
    return json.dumps(obj, ensure_ascii=style == "dumps-ascii", indent=rng.choice((None, 1)))


@st.composite
def chunkings(draw: st.DrawFn, text: str) -> list[str]:
    if len(text) > 1 and draw(st.integers(0, 4)) == 0:
        return list(text)  # one character at a time
    cuts = draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=40))
    return split_at(text, cuts)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_documents_and_chunkings_decode_like_json_loads(data: st.DataObject) -> None:
    doc = data.draw(documents())
    chunks = data.draw(chunkings(doc))
    scanner, fragments = scan(chunks)
    want = expected(doc)
    assert not scanner.failed, scanner.error
    assert scanner.complete
    assert apply(fragments) == want
    for key in WATCHED:
        assert scanner.value(key) == want.get(key)
        assert scanner.done(key) == (key in want)
    # Without repeated keys every fragment is an append, and each key's run is contiguous.
    lengths: dict[str, int] = {}
    for fragment in fragments:
        assert fragment.offset == lengths.get(fragment.key, 0)
        lengths[fragment.key] = fragment.offset + len(fragment.text)
    runs = [f.key for i, f in enumerate(fragments) if i == 0 or fragments[i - 1].key != f.key]
    assert len(runs) == len(set(runs))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_corrupted_documents_fail_exactly_when_json_loads_does(data: st.DataObject) -> None:
    doc = data.draw(documents())
    position = data.draw(st.integers(0, len(doc)))
    noise = data.draw(st.sampled_from([*'{}[]:,"\\ u0aeE.-+tfnIN\x01', "\\u12", "\\ud83d"]))
    action = data.draw(st.sampled_from(["insert", "delete", "replace", "truncate"]))
    if action == "insert":
        doc = doc[:position] + noise + doc[position:]
    elif action == "delete":
        doc = doc[:position] + doc[position + 1 :]
    elif action == "replace":
        doc = doc[:position] + noise + doc[position + 1 :]
    else:
        doc = doc[:position]
    whole, _ = scan([doc])
    chunked, fragments = scan(data.draw(chunkings(doc)))
    assert chunked.failed == whole.failed
    assert chunked.complete == whole.complete
    try:
        parsed = json.loads(doc)
    except ValueError:
        assert whole.failed or not whole.complete
        if whole.failed:
            assert chunked.feed("}") == []  # failed scanners stay quiet
        return
    assert not whole.failed, whole.error
    if isinstance(parsed, dict):
        assert whole.complete
        for key in WATCHED:
            if isinstance(parsed.get(key), str):
                assert chunked.value(key) == parsed[key]
                assert apply(fragments)[key] == parsed[key]


# -- every boundary, explicitly ---------------------------------------------------------------


def test_every_escape_split_anywhere() -> None:
    content = 'a"b\\c/d\be\ff\ng\rh\ti' + "\u00e9\u20ac\U0001f600\x00\x1f"
    check_all_chunkings(json.dumps({"path": "x.html", "content": content}))
    check_all_chunkings(json.dumps({"content": content}, ensure_ascii=False))
    check_all_chunkings(r'{"content": "\/\u0041\u00E9\u00e9\uABCD"}')


def test_surrogate_pairs_and_lone_surrogates_split_anywhere() -> None:
    cases = [
        r'{"content": "\ud83d\ude00"}',  # a pair: one astral character
        r'{"content": "\uD83D\uDE00x"}',
        r'{"content": "\ud83dx"}',  # lone high, then a plain character
        r'{"content": "\ud83d"}',  # lone high right before the closing quote
        r'{"content": "\ud83d\u0041"}',  # high then a non-surrogate escape
        r'{"content": "\ud83d\n"}',  # high then a simple escape
        r'{"content": "\ud83d\ud83d\ude00"}',  # lone high, then a pair
        r'{"content": "\ude00\ud83d"}',  # low then high: two lone surrogates
        '{"content": "\\ud83d\ude00"}',  # escaped high, raw low: not joined
    ]
    for doc in cases:
        check_all_chunkings(doc)
    _, fragments = scan(r'{"content": "\ud83d\ude00"}')
    assert apply(fragments)["content"] == "\U0001f600"
    assert len(apply(fragments)["content"]) == 1


def test_lone_high_surrogate_at_chunk_end_waits_for_its_partner() -> None:
    scanner = ArgumentScanner()
    assert scanner.feed('{"content": "ab\\ud83d') == [Fragment("content", "ab", 0)]
    assert scanner.feed("\\") == []
    assert scanner.feed("ude") == []
    assert scanner.feed("00!") == [Fragment("content", "\U0001f600!", 2)]
    scanner = ArgumentScanner()
    assert scanner.feed('{"content": "\\ud83d') == [Fragment("content", "", 0)]
    assert scanner.feed('"}') == [Fragment("content", "\ud83d", 0)]
    assert scanner.complete


def test_keys_in_any_order_with_whitespace_and_other_values_first() -> None:
    docs = [
        '{"path":"a.html","content":"<p>hi</p>"}',
        '{"content":"<p>hi</p>","path":"a.html"}',
        ' \n{ "content" :\t"<p>hi</p>" ,\r\n "path"  :  "a.html" } \n',
        '{"n": -1.5e+3, "t": true, "f": false, "z": null, "nan": NaN, "inf": -Infinity,'
        ' "nested": {"content": "no", "path": ["no", {"content": "no"}]},'
        ' "list": [[], {}, "content", {"path": "no"}], "content": "<p>hi</p>", "path": "a.html"}',
        '{"\\u0063ontent": "<p>hi</p>", "pa\\u0074h": "a.html"}',  # escaped key names
    ]
    for doc in docs:
        assert expected(doc) == {"content": "<p>hi</p>", "path": "a.html"}
        check_all_chunkings(doc)


def test_path_may_come_before_or_after_content_and_is_reported_in_order() -> None:
    scanner, fragments = scan(['{"content": "<h1>', 'x</h1>", "path": "p', 'age.html"}'])
    assert fragments == [
        Fragment("content", "<h1>", 0),
        Fragment("content", "x</h1>", 4),
        Fragment("path", "p", 0),
        Fragment("path", "age.html", 1),
    ]
    assert scanner.value("path") == "page.html"
    scanner = ArgumentScanner()
    assert scanner.feed('{"path": "a.html", "content": "<') == [
        Fragment("path", "a.html", 0),
        Fragment("content", "<", 0),
    ]
    assert scanner.done("path")
    assert not scanner.done("content")


def test_nested_and_non_string_values_of_watched_names_are_ignored() -> None:
    scanner, fragments = scan(
        ['{"a": {"content": "x"}, "b": ["path"], "content": 5, "path": null}']
    )
    assert fragments == []
    assert scanner.complete
    assert scanner.value("content") is None
    assert not scanner.done("content")


def test_top_level_values_other_than_objects_yield_nothing() -> None:
    for doc in ('["content", "x"]', '"content"', "12", '[{"content": "x"}]'):
        scanner, fragments = scan(doc)
        assert fragments == []
        assert not scanner.failed


def test_value_and_done_while_streaming() -> None:
    scanner = ArgumentScanner()
    assert scanner.value("content") is None
    assert scanner.feed('{"content": "') == [Fragment("content", "", 0)]  # it has started
    assert scanner.value("content") == ""
    assert not scanner.done("content")
    scanner.feed("abc")
    scanner.feed("def")
    assert scanner.value("content") == "abcdef"
    assert scanner.value("content") == "abcdef"
    scanner.feed('"')
    assert scanner.done("content")
    assert not scanner.complete
    scanner.feed("}")
    assert scanner.complete


def test_only_the_keys_asked_for_are_watched() -> None:
    _, fragments = scan(['{"path": "a", "content": "b", "title": "c"}'], keys=["title"])
    assert fragments == [Fragment("title", "c", 0)]


def test_several_tool_calls_in_one_turn_scan_independently() -> None:
    first = json.dumps({"path": "a.html", "content": "<p>one \\ \u00e9</p>"})
    second = json.dumps({"content": "<p>two \ud83d\ude00</p>", "path": "b.html"})
    scanners = [ArgumentScanner(), ArgumentScanner()]
    fragments: list[list[Fragment]] = [[], []]
    for i in range(max(len(first), len(second))):
        for n, doc in enumerate((first, second)):
            fragments[n] += scanners[n].feed(doc[i : i + 1])
    assert apply(fragments[0]) == json.loads(first)
    assert apply(fragments[1]) == json.loads(second)


def test_one_fragment_per_key_per_chunk() -> None:
    scanner = ArgumentScanner()
    chunk = '{"content": "a\\nb\\u00e9c\\"d' + "x" * 100
    assert scanner.feed(chunk) == [Fragment("content", 'a\nb\u00e9c"d' + "x" * 100, 0)]
    assert scanner.feed("") == []


@pytest.mark.parametrize(
    "doc",
    [
        '{"content": "a\\x"}',  # unknown escape
        '{"content": "\\u12G4"}',  # bad hex
        '{"content": "\\ud83d\\uZZZZ"}',  # bad hex in the would-be low surrogate
        '{"content": "a\nb"}',  # raw control character
        '{"content": "a"',  # fine so far ...
        '{"content" "a"}',
        '{"content": "a",}',
        '{"a": [1,]}',
        '{"a": 01}',
        '{"a": 1.}',
        '{"a": -}',
        '{"a": tru}',
        '{"a": nul, "content": "x"}',
        '{"a": [}',
        '{"a": {]}',
        '{"a": 1} x',
        "{'content': 'x'}",
        '{"a": 1 2}',
        "}",
    ],
)
def test_invalid_input_fails_without_raising(doc: str) -> None:
    with pytest.raises(json.JSONDecodeError):  # the table holds invalid documents only
        json.loads(doc)
    for chunks in ([doc], list(doc)):
        scanner, _ = scan(chunks)
        if doc == '{"content": "a"':
            assert not scanner.failed
            assert not scanner.complete
            continue
        assert scanner.failed, doc
        assert scanner.error is not None
        assert "invalid JSON at character" in scanner.error
        assert scanner.feed('"more"}') == []


def test_text_decoded_before_an_error_is_kept() -> None:
    scanner = ArgumentScanner()
    assert scanner.feed('{"content": "<p>ok\\q') == [Fragment("content", "<p>ok", 0)]
    assert scanner.failed
    assert scanner.error == "invalid JSON at character 18: invalid escape"
    assert scanner.value("content") == "<p>ok"


def test_error_position_counts_from_the_start_of_the_stream() -> None:
    scanner = ArgumentScanner()
    scanner.feed('{"content": "ab')
    scanner.feed("\\")
    scanner.feed("x")
    assert scanner.error == "invalid JSON at character 15: invalid escape"


def test_repeated_key_restarts_its_value_like_json_loads() -> None:
    doc = '{"content": "first", "path": "a", "content": "second"}'
    scanner, fragments = scan(list(doc))
    assert apply(fragments) == json.loads(doc) == {"content": "second", "path": "a"}
    starts = [f for f in fragments if f.key == "content" and f.offset == 0]
    assert [f.text for f in starts] == ["", "f", "", "s"]  # opening quote, first character
    assert scanner.value("content") == "second"
    # An empty repeat still tells the consumer to clear what it has.
    doc = '{"content": "first", "content": ""}'
    scanner, fragments = scan([doc[:25], doc[25:]])
    assert fragments[-1] == Fragment("content", "", 0)
    assert apply(fragments) == {"content": ""}
    assert scanner.done("content")


def test_repeated_key_with_a_non_string_value_keeps_the_string() -> None:
    scanner, _ = scan(['{"content": "x", "content": 3}'])
    assert scanner.value("content") == "x"


# -- through the event log -------------------------------------------------------------------


async def _merged_by_the_event_log(chunks: Sequence[str], ticks: Sequence[bool]) -> str:
    """The content as a consumer rebuilds it from what the event log commits, the fragments
    published as the engine does and the log ticking after the chunks `ticks` marks."""
    log = EventLog("g", tick_s=3600)  # ticks only when the test says so
    scanner = ArgumentScanner()
    for chunk, tick in zip(chunks, ticks, strict=True):
        for fragment in scanner.feed(chunk):
            if fragment.key == "content":
                log.publish(0, "call-1", CodeDelta(fragment.offset, fragment.text))
        if tick:
            log.tick()
    log.publish(0, "", GenerationComplete("completed"))
    code = ""
    async for events in log.batches():
        for event in events:
            if isinstance(event.payload, CodeDelta):
                assert 0 <= event.payload.offset <= len(code)
                code = code[: event.payload.offset] + event.payload.text
    return code


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_merged_code_deltas_rebuild_the_same_value(data: st.DataObject) -> None:
    doc = data.draw(documents())
    chunks = data.draw(chunkings(doc))
    ticks = data.draw(st.lists(st.booleans(), min_size=len(chunks), max_size=len(chunks)))
    rebuilt = asyncio.run(_merged_by_the_event_log(chunks, ticks))
    assert rebuilt == expected(doc).get("content", "")
