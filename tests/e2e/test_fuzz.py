"""Fuzzing the running suite: every malformed input gets a clear answer, nothing dies or leaks.

Two campaigns, each against its own set of real processes (`running_processes`):

- WebSocket: >= 2,000 params frames (one socket each: the gateway closes after an
  error) — non-JSON text, invalid UTF-8, binary frames, JSON that is not an object,
  JSON too deep or with numbers too long to hold, and upstream-shaped params with
  hostile values (wrong types in every field, huge strings, lone surrogates, unknown
  stacks and modes, bad data URLs, too many images or messages, bad resumes).
- gRPC: >= 2,000 requests to the agent (GenerateCode with malformed fields,
  Watch/Get/CancelGeneration with made-up ids, random and mutated protobuf bytes) and
  >= 2,000 to a tool worker (ExecuteTool with random names, ids, arguments, files and
  contexts, and random bytes).

Hypothesis draws the inputs (fixed seeds, no example database: the same inputs on
every run). Its test function is synchronous, so it runs in a worker thread and hands
each input to the event loop that owns the clients. An oracle that mirrors the
documented rules (`services/gateway/params.py`, `services/agent/convert.py`,
`services/tools/servicer.py`, the prompt pipeline) says what each input must get;
every mismatch is recorded rather than raised, so one run reports every kind of
failure, each with the smallest input that showed it.

After a campaign: every process is alive, health says SERVING, no service logged an
error (an exception escaping a handler is logged at error level), and each process's
RSS is back near the baseline measured after a warm-up round.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import socket
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import aiohttp
import grpc
import pytest
from google.protobuf import struct_pb2
from google.protobuf.message import DecodeError, Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2
from s2c.tools.v1 import tool_service_pb2 as tpb

from services.agent.convert import MAX_HISTORY, MAX_IMAGES
from services.agent.models import CATALOGUE, MAX_VARIANTS
from services.common.errors import bad_request_violations
from services.common.grpc_server import CHANNEL_OPTIONS
from services.common.text import clean_json
from services.tools.definitions import TOOL_DEFINITIONS
from tests.processes import Processes, Service, running_processes
from tests.suite import create_params, png_data_url, run_ws

T = TypeVar("T")

# About 30-45 s each on two idle cores; the margin is for a CI machine that is busy.
pytestmark = pytest.mark.timeout(300)

WS_FRAMES = 2_000
AGENT_REQUESTS = 2_000
TOOL_REQUESTS = 2_000
WARM_UP = 150
# The gRPC cases carry up to a megabyte of garbage each, and the allocators' high-water
# marks (not a leak) only settle after many of them: a longer warm-up there, so "back to
# the baseline" compares steady state with steady state.
GRPC_WARM_UP = 1_000
BATCH = 5
# Not a timed assertion: a bound on how long one exchange may take before it is
# recorded as a hang, so a stuck server fails the test with a report instead of
# stalling it until pytest-timeout.
EXCHANGE_TIMEOUT_S = 30.0
# RSS may grow this much over a campaign. Freed memory is not all handed back to the
# OS (CPython's arenas and glibc's malloc keep pages a multi-MB frame touched; gRPC
# keeps per-channel buffers), and a warm-up cannot reach every high-water mark, so
# "back to baseline" cannot mean byte-exact. A leak per request is what this
# catches: 2,000 requests leaking even 15 KB each is 30 MB.
RSS_SLACK_BYTES = 30 * 1024 * 1024
# Finished generations are kept in memory by design (the agent retains the last 256,
# with their requests and event logs, for WatchGeneration): each input that started
# one may cost the agent twice what it carried plus this much per variant (a demo
# variant's log measures about 60 KB), on top of the slack above.
RETAINED_VARIANT_BYTES = 100 * 1024

APP_ERROR = 4332
# Transport internals and crash traces: never a clear error for a person.
UNCLEAR = ("Traceback", "RESOURCE_EXHAUSTED", "Stream removed", "INTERNAL:", "UNKNOWN:")

# ---------------------------------------------------------------------------------------
# What the services accept (mirrors of the documented rules)

STACKS = (
    "html_tailwind",
    "html_css",
    "react_tailwind",
    "bootstrap",
    "vue_tailwind",
    "ionic_tailwind",
)
INPUT_MODES = ("image", "video", "text")
GENERATION_TYPES = ("create", "update")
IMAGE_URL = re.compile(r"data:image/(png|jpeg|jpg|gif|webp|heic|heif);base64,", re.I)
VIDEO_URL = re.compile(r"data:video/[a-z0-9.+-]+;base64,", re.I)
GENERATION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
KNOWN_TOOLS = tuple(d.name for d in TOOL_DEFINITIONS)
MAX_TOOL_NAME = 64  # services/tools/servicer.py
MAX_TOOL_ID = 256
PNG = png_data_url(8, 8)
# An https URL the agent accepts; the demo model never fetches it, and anything that
# did would stay on this machine.
LOOPBACK_HTTPS = "https://127.0.0.1:9/picture.png"


def media_ok(urls: list[str], pattern: re.Pattern[str]) -> bool:
    return len(urls) <= MAX_IMAGES and all(
        pattern.match(url) or url.startswith("https://") for url in urls
    )


def model_ok(model: str) -> bool:
    return model in CATALOGUE or (model.startswith("local:") and len(model) > len("local:"))


# ---------------------------------------------------------------------------------------
# Failure bookkeeping


@dataclass
class Failure:
    count: int
    example: str


@dataclass
class Findings:
    """Mismatches by kind, each with the smallest input that showed it."""

    failures: dict[str, Failure] = field(default_factory=dict)
    outcomes: Counter[str] = field(default_factory=Counter)

    def add(self, kind: str, example: str) -> None:
        found = self.failures.get(kind)
        if found is None:
            self.failures[kind] = Failure(1, example)
            return
        found.count += 1
        if len(example) < len(found.example):
            found.example = example

    def report(self) -> list[str]:
        return [
            f"{f.count}x {kind}\n    smallest input: {f.example}"
            for kind, f in sorted(self.failures.items(), key=lambda kv: -kv[1].count)
        ]


def _shape(text: str, limit: int = 120) -> str:
    """`text` with the parts that vary per input (numbers, odd characters) blurred,
    so that failures of one kind are counted together."""
    text = re.sub(r"\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2}|[\ud800-\udfff]", "?", text)
    text = re.sub(r"(.)\1{3,}", r"\1…", text)
    text = re.sub(r"\d+", "N", text)
    return text if len(text) <= limit else text[:limit] + "…"


def _clip(text: str | bytes, limit: int = 240) -> str:
    shown = repr(text[:limit])
    return shown if len(text) <= limit else f"{shown}… ({len(text)} in all)"


# ---------------------------------------------------------------------------------------
# Running hypothesis against services owned by the event loop


async def run_campaign(
    strategy: st.SearchStrategy[T],
    cases: int,
    seed_value: int,
    check: Callable[[T], Coroutine[Any, Any, None]],
) -> int:
    """Runs `check` on `cases` inputs drawn from `strategy`; returns how many ran.

    Each hypothesis example is a batch of BATCH inputs, checked concurrently: the
    engine's cost per example grows with the number of examples, so fewer, bigger
    examples draw the same inputs several times faster. Two batches may be in flight,
    so drawing the next one (CPU in this process) overlaps with the services
    answering the last one (other processes).
    """
    loop = asyncio.get_running_loop()
    slots = threading.BoundedSemaphore(2)
    started: list[concurrent.futures.Future[list[None]]] = []

    async def check_batch(batch: list[T]) -> list[None]:
        return await asyncio.gather(*(check(case) for case in batch))

    @seed(seed_value)
    @settings(
        max_examples=-(-cases // BATCH),
        deadline=None,
        database=None,
        derandomize=False,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(st.lists(strategy, min_size=BATCH, max_size=BATCH))
    def campaign(batch: list[T]) -> None:
        slots.acquire()
        future = asyncio.run_coroutine_threadsafe(check_batch(batch), loop)
        future.add_done_callback(lambda _: slots.release())
        started.append(future)

    await asyncio.to_thread(campaign)
    for future in started:
        await asyncio.wrap_future(future)  # a check that raised fails the test here
    return len(started) * BATCH


# ---------------------------------------------------------------------------------------
# Process health


def rss_bytes(pid: int) -> int | None:
    """VmRSS of `pid`, or None when it is gone (health_problems says so)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return None  # a zombie: exited, not yet reaped


def memory(suite: Processes) -> dict[str, int]:
    sizes = {s.name: rss_bytes(s.process.pid) for s in services(suite)}
    return {name: size for name, size in sizes.items() if size is not None}


def services(suite: Processes) -> tuple[Service, Service, Service]:
    return (suite.tools, suite.agent, suite.gateway)


def listening_ports(pid: int) -> set[int]:
    """TCP ports `pid` listens on (from /proc: its socket inodes, then the TCP tables)."""
    inodes: set[str] = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


async def health_problems(suite: Processes) -> list[str]:
    problems = [
        f"{s.name} died (exit {s.process.returncode}); last log lines:\n{''.join(s.log[-5:])}"
        for s in services(suite)
        if s.process.returncode is not None
    ]
    for service in (suite.agent, suite.tools):
        if service.process.returncode is not None:
            continue
        async with grpc.aio.insecure_channel(f"127.0.0.1:{service.port}") as channel:
            response = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=EXCHANGE_TIMEOUT_S
            )
        if response.status != health_pb2.HealthCheckResponse.SERVING:
            problems.append(f"{service.name} health is {response.status}, not SERVING")
    if suite.gateway.process.returncode is None:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{suite.gateway.port}/healthz") as response:
                if response.status != 200:
                    problems.append(f"gateway /healthz answered {response.status}")
        # Serving, and still doing the job: one ordinary generation through all three.
        result = await run_ws(suite.ws_url, create_params())
        if result.close_code != 1000 or not result.of("variantComplete"):
            problems.append(
                f"an ordinary generation after the campaign failed: close {result.close_code}, "
                f"frames {[f['type'] for f in result.frames][-4:]}"
            )
    return problems


def error_log_problems(suite: Processes) -> list[str]:
    """An exception escaping a handler is logged at error level: a crash of that request."""
    seen: Counter[str] = Counter()
    for service in services(suite):
        for line in service.log:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record.get("level") in ("error", "critical"):
                exc = str(record.get("exc", "")).strip().splitlines()
                last = _shape(exc[-1] if exc else "")
                seen[f"{service.name} logged {_shape(str(record.get('msg')))!r}: {last!r}"] += 1
    return [f"{n}x {what}" for what, n in seen.items()]


def memory_problems(
    before: dict[str, int], after: dict[str, int], allowance: dict[str, int]
) -> list[str]:
    problems = []
    for name, start in before.items():
        if name not in after:
            continue  # died: reported by health_problems
        limit = RSS_SLACK_BYTES + allowance.get(name, 0)
        grown = after[name] - start
        if grown > limit:
            problems.append(
                f"{name} RSS grew {grown / 2**20:.1f} MiB over the campaign "
                f"({start / 2**20:.1f} → {after[name] / 2**20:.1f} MiB; "
                f"allowed {limit / 2**20:.1f} MiB)"
            )
    return problems


@asynccontextmanager
async def closed_port() -> AsyncIterator[int]:
    """A loopback port bound (so nobody else takes it) but not listening: connects fail fast."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        yield port


def closed_port_env(port: int) -> dict[str, str]:
    closed = f"http://127.0.0.1:{port}"
    return {
        # The demo model only, whatever keys a fuzzed request carries; and should any
        # provider still be reached, it is a loopback port where nothing listens.
        "S2C_MODELS": "demo",
        "OPENAI_BASE_URL": closed,
        "ANTHROPIC_BASE_URL": closed,
        "GEMINI_BASE_URL": closed,
        "REPLICATE_BASE_URL": closed,
        "S2C_LOCAL_BASE_URL": closed,
        # Chromium renders pages in its own processes, seconds per screenshot; the
        # fuzzing is about how requests are handled, not about rendering.
        "S2C_SCREENSHOTS": "0",
    }


# ---------------------------------------------------------------------------------------
# Hostile JSON values


@dataclass(frozen=True)
class Raw:
    """JSON text spliced in verbatim (nesting or numbers json.dumps would refuse)."""

    text: str


def encode_json(value: object, ensure_ascii: bool = True) -> str:
    raws: list[str] = []

    def swap(item: object) -> object:
        if isinstance(item, Raw):
            raws.append(item.text)
            return f"@@raw-{len(raws) - 1}@@"
        if isinstance(item, dict):
            return {k: swap(v) for k, v in item.items()}
        if isinstance(item, list):
            return [swap(v) for v in item]
        return item

    swapped = swap(value)
    text = json.dumps(swapped, ensure_ascii=ensure_ascii)
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate: it can only travel escaped
        text = json.dumps(swapped)
    for i, raw in enumerate(raws):
        text = text.replace(json.dumps(f"@@raw-{i}@@"), raw, 1)
    return text


def deep(kind: str, depth: int) -> Raw:
    if kind == "[":
        return Raw("[" * depth + "]" * depth)
    return Raw('{"a":' * depth + "0" + "}" * depth)


SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
short_text = st.text(max_size=24)
lone_surrogates = st.builds(
    lambda head, surrogate, tail: head + surrogate + tail,
    st.text(max_size=3),
    SURROGATE,
    st.text(max_size=3),
)
huge_text = st.builds(
    lambda unit, n: unit * n,
    st.sampled_from(["x", "é", "<script>", "\x00", "\u2028", "🙂", "\\", '"']),
    st.integers(5_000, 300_000),
)
# Depths clear of the interpreter's recursion limit on either side, so the oracle's
# own parse agrees with the server's: shallow ones parse, deep ones cannot.
shallow_nesting = st.builds(deep, st.sampled_from(["[", "{"]), st.integers(2, 600))
unparseable = st.one_of(
    st.builds(deep, st.sampled_from(["[", "{"]), st.integers(1_500, 60_000)),
    # Python refuses to turn more than 4,300 digits into an int.
    st.integers(4_301, 40_000).map(lambda n: Raw("9" * n)),
)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), short_text, lone_surrogates
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(short_text, inner, max_size=3),
    max_leaves=6,
)
# Drawing from a fixed set costs hypothesis one choice; recursive values cost dozens.
ODD_VALUES: tuple[object, ...] = (
    0,
    -1,
    2**64,
    -(2**70),
    1e308,
    -0.0,
    float("inf"),
    float("nan"),
    True,
    False,
    None,
    "",
    " ",
    "null",
    "None",
    "[]",
    "{}",
    "data:",
    "\x00",
    "\u2028",
    "\ufeff",
    "🙂",
    "\ud800",
    {},
    [],
    [None],
    [[]],
    {"": None},
    {"__proto__": {}},
    ["user", "assistant"],
    {"role": "user"},
)
hostile = st.one_of(
    st.sampled_from(ODD_VALUES),
    json_values,
    huge_text,
    shallow_nesting,
)


def weighted(*choices: tuple[int, st.SearchStrategy[T]]) -> st.SearchStrategy[T]:
    """One of `choices`, each picked in proportion to its weight (`one_of` picks evenly)."""
    return st.sampled_from([s for weight, s in choices for _ in range(weight)]).flatmap(
        lambda strategy: strategy
    )


def either(valid: st.SearchStrategy[Any], weight: int = 4) -> st.SearchStrategy[Any]:
    """Mostly `valid`, sometimes anything at all."""
    return weighted((weight, valid), (1, hostile))


BAD_URLS = (
    "http://127.0.0.1:9/x.png",
    "ftp://127.0.0.1/x.png",
    "javascript:alert(1)",
    "data:text/html;base64,PGgxPmhpPC9oMT4=",
    "data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=",
    "data:image/png,not-base64",
    "file:///etc/passwd",
    "//127.0.0.1/x.png",
    " data:image/png;base64,AAAA",
    "HTTPS://127.0.0.1:9/x.png",
)
DATA_PREFIXES = (
    "data:image/png;base64,",
    "data:image/JPEG;base64,",
    "data:image/heic;base64,",
    "data:video/mp4;base64,",
    "data:video/webm;base64,",
)
media_url = st.one_of(
    st.just(PNG),
    st.just(LOOPBACK_HTTPS),
    st.sampled_from(BAD_URLS),
    st.builds(str.__add__, st.sampled_from(DATA_PREFIXES), st.text(max_size=40)),
    short_text,
    scalars,  # not strings: the gateway drops them
)
media_lists = weighted(
    (2, st.lists(st.sampled_from([PNG, LOOPBACK_HTTPS]), max_size=2)),
    (3, st.lists(media_url, max_size=3)),
    (1, st.lists(st.just(PNG), min_size=MAX_IMAGES + 1, max_size=MAX_IMAGES + 3)),
    (1, hostile),
)
prompts = either(
    st.fixed_dictionaries(
        {},
        optional={
            "text": either(short_text),
            "fullText": either(short_text),
            "images": media_lists,
            "videos": media_lists,
        },
    )
)
history_items = either(
    st.fixed_dictionaries(
        {"role": either(st.sampled_from(["user", "assistant"]))},
        optional={"text": either(short_text), "images": media_lists, "videos": media_lists},
    )
)
histories = weighted(
    (6, st.lists(history_items, max_size=4)),
    (1, st.lists(st.just({"role": "user", "text": "x"}), min_size=MAX_HISTORY + 1, max_size=205)),
    (1, hostile),
)
file_states = either(
    st.fixed_dictionaries(
        {},
        optional={
            "content": either(st.sampled_from(["<html><body>hi</body></html>", "  \n"])),
            "path": either(short_text),
        },
    )
)
EXTRA_KEYS = (
    "optionCodes",
    "isImageGenerationEnabled",
    "isAssetExtractionEnabled",
    "designSystem",
    "codeGenerationModel",
    "openAiApiKey",
    "anthropicApiKey",
    "geminiApiKey",
    "replicateApiKey",
    "openAiBaseURL",
    "resumable",
    "isTermOfServiceAccepted",
    "editorTheme",
)
params_values = st.builds(
    lambda core, extras: {**extras, **core},
    st.fixed_dictionaries(
        {
            "generatedCodeConfig": either(st.sampled_from(STACKS), weight=6),
            "inputMode": either(st.sampled_from(INPUT_MODES), weight=6),
        },
        optional={
            "generationType": either(st.sampled_from(GENERATION_TYPES), weight=12),
            "prompt": prompts,
            "history": histories,
            "fileState": file_states,
        },
    ),
    # The fields the gateway only copies or ignores: any value, a few at a time.
    st.dictionaries(
        st.sampled_from(EXTRA_KEYS),
        weighted((2, st.sampled_from(ODD_VALUES)), (1, short_text), (1, st.lists(scalars))),
        max_size=3,
    ),
)
PARAMS_FAULTS = (
    "generatedCodeConfig",
    "inputMode",
    "generationType",
    "images",
    "videos",
    "history_media",
    "history_size",
    "video_without_video",
    "update_without_context",
    "assistant_only_history",
)
bad_urls = weighted(
    (4, st.lists(st.sampled_from(BAD_URLS), min_size=1, max_size=MAX_IMAGES)),
    (1, st.lists(st.just(PNG), min_size=MAX_IMAGES + 1, max_size=MAX_IMAGES + 3)),
    (1, st.integers(10_000, 2_000_000).map(lambda n: ["x" * n])),
)


@st.composite
def faulty_params(draw: st.DrawFn) -> dict[str, Any]:
    """Upstream-shaped params with one fault that gets them refused."""
    params = dict(draw(params_values))
    prompt = params.get("prompt")
    prompt = dict(prompt) if isinstance(prompt, dict) else {}
    fault = draw(st.sampled_from(PARAMS_FAULTS))
    if fault in ("generatedCodeConfig", "inputMode", "generationType"):
        params[fault] = draw(hostile)
    elif fault in ("images", "videos"):
        params["prompt"] = {**prompt, fault: draw(bad_urls)}
    elif fault == "history_media":
        # Sometimes a violation for every one of 20 images in each of 200 messages.
        count = draw(st.one_of(st.just(1), st.integers(1, MAX_HISTORY)))
        params["history"] = [{"role": "user", "text": "x", "images": draw(bad_urls)}] * count
    elif fault == "history_size":
        params["history"] = [{"role": "user", "text": "x"}] * draw(st.integers(201, 230))
    elif fault == "video_without_video":
        params.update(inputMode="video", generationType="create", prompt={**prompt, "videos": []})
    elif fault == "update_without_context":
        params["generationType"] = "update"
        params.pop("history", None)
        params.pop("fileState", None)
    else:
        params.update(generationType="update", history=[{"role": "assistant", "text": "x"}])
    return params


resume_values = st.fixed_dictionaries(
    {
        "resumeGenerationId": either(
            st.one_of(
                st.text(alphabet="0123456789abcdef", min_size=1, max_size=32),
                st.integers(5_000, 40_000).map(lambda n: "g" * n),
            )
        )
    },
    optional={"afterSequence": either(st.integers(0, 10**6)), "generatedCodeConfig": hostile},
)


# ---------------------------------------------------------------------------------------
# WebSocket: inputs, oracle, judge


@dataclass(frozen=True)
class WsCase:
    opcode: Literal["text", "binary"]
    data: bytes

    def describe(self) -> str:
        return f"{self.opcode} frame {_clip(self.data)}"


def text_case(value: object, ensure_ascii: bool) -> WsCase:
    return WsCase("text", encode_json(value, ensure_ascii).encode())


def broken_json(text: str, cut: int, junk: str) -> WsCase:
    i = cut % (len(text) + 1)
    return WsCase("text", (text[:i] + junk).encode())


# Hypothesis favours the first entries of a sampled_from: the costly inputs (those
# that start a generation) come last.
ws_cases: st.SearchStrategy[WsCase] = weighted(
    (9, st.builds(text_case, faulty_params(), st.booleans())),
    (2, st.builds(text_case, resume_values, st.booleans())),
    # Upstream-shaped params with one value the JSON parser cannot hold.
    (
        1,
        st.builds(
            lambda params, key, value: text_case({**params, key: value}, True),
            params_values,
            st.sampled_from(["prompt", "generatedCodeConfig", "optionCodes", "history"]),
            unparseable,
        ),
    ),
    (1, st.builds(text_case, hostile, st.booleans())),
    (
        1,
        st.builds(
            broken_json,
            st.builds(encode_json, params_values),
            st.integers(0, 10**6),
            st.sampled_from(["", "}", ",", '"', "\\", "\ufeff", "NaN", "'"]),
        ),
    ),
    (
        1,
        st.sampled_from(
            ["", " ", "\ufeff{}", "{'a': 1}", "[1,]", "{,}", "tru", "\x00", "0x1F"]
        ).map(lambda text: WsCase("text", text.encode())),
    ),
    (1, st.text(max_size=200).map(lambda text: WsCase("text", text.encode()))),
    # Unclosed nesting; lengths clear of the recursion limit, as for `deep_values`.
    (
        1,
        st.builds(
            lambda n: WsCase("text", b"[" * n),
            st.one_of(st.integers(1, 600), st.integers(1_500, 300_000)),
        ),
    ),
    # Invalid UTF-8 in a text frame (no browser sends it, a fuzzer does).
    (
        1,
        st.builds(
            lambda head, body: WsCase("text", head + body),
            st.sampled_from([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b'{"a":"\xfe"}', b"\xf8\x88"]),
            st.binary(max_size=64),
        ),
    ),
    (1, st.binary(max_size=256).map(lambda data: WsCase("text", data))),
    (1, st.binary(max_size=256).map(lambda data: WsCase("binary", data))),
    (
        1,
        st.builds(lambda value: WsCase("binary", encode_json(value).encode()), params_values),
    ),
    (3, st.builds(text_case, params_values, st.booleans())),
)


@dataclass(frozen=True)
class Expect:
    """What an input must get.

    refused: an `error` frame (the last one), then close 4332; `exact` or `prefix`
    pins its text. generates: a generation that ends with close 1000. clean: either
    of the two (the rules leave it open), but never a crash or an unclear error.
    """

    kind: Literal["refused", "generates", "clean"]
    why: str
    exact: str | None = None
    prefix: str | None = None


MAX_SANE_NESTING = 1_000  # the generated depths stay well clear of it on either side
# A string (unterminated ones run to the end, so each character is looked at once),
# or a bracket.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')


def nesting(text: str) -> int:
    """How deep the brackets of `text` (outside strings) nest, closed or not."""
    if text.count("[") + text.count("{") <= MAX_SANE_NESTING:
        return 0  # cannot be too deep; the exact depth does not matter then
    depth = deepest = 0
    for token in _JSON_TOKEN.findall(text):
        if token in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in ("]", "}"):
            depth -= 1
    return deepest


def _show(value: Any) -> str:
    return "None" if value is None else str(value)


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


SURROGATES = re.compile("[\ud800-\udfff]")


def _has_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if SURROGATES.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def expect_ws(case: WsCase) -> Expect:
    if case.opcode == "binary":
        return Expect("refused", "binary frame", exact="Invalid params: expected a JSON text frame")
    try:
        text = case.data.decode("utf-8")
    except UnicodeDecodeError:
        return Expect("refused", "text frame that is not UTF-8")
    if nesting(text) > MAX_SANE_NESTING:
        # Decided by counting, not by parsing: how deep json.loads gets depends on the
        # recursion limit, which hypothesis raises while it runs.
        return Expect("refused", "JSON nested too deep to parse")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError:
        return Expect("refused", "not JSON", prefix="Invalid params: not valid JSON")
    except ValueError:
        return Expect("refused", "a number too long to hold")
    surrogates = _has_surrogate(raw)
    # The gateway replaces lone surrogates with U+FFFD before reading the params.
    params = clean_json(raw)
    if not isinstance(params, dict):
        return Expect("refused", "not an object", exact="Invalid params: expected a JSON object")
    if "resumeGenerationId" in params:
        return _expect_resume(params)
    stack = params.get("generatedCodeConfig")
    if not isinstance(stack, str) or stack not in STACKS:
        return Expect("refused", "stack", exact=f"Invalid generated code config: {_show(stack)}")
    mode = params.get("inputMode")
    if not isinstance(mode, str) or mode not in INPUT_MODES:
        return Expect("refused", "input mode", exact=f"Invalid input mode: {_show(mode)}")
    generation_type = params.get("generationType", "create")
    if not isinstance(generation_type, str) or generation_type not in GENERATION_TYPES:
        return Expect(
            "refused",
            "generation type",
            exact=f"Invalid generation type: {_show(generation_type)}",
        )
    if surrogates:
        # Unencodable text: refusing it and replacing it are both fine; crashing is not.
        return Expect("clean", "lone surrogate")
    prompt = params.get("prompt")
    images = _strings(prompt.get("images")) if isinstance(prompt, dict) else []
    videos = _strings(prompt.get("videos")) if isinstance(prompt, dict) else []
    raw_history = params.get("history")
    history = [
        item
        for item in (raw_history if isinstance(raw_history, list) else [])
        if isinstance(item, dict) and item.get("role") in ("user", "assistant")
    ]
    media_valid = (
        media_ok(images, IMAGE_URL)
        and media_ok(videos, VIDEO_URL)
        and len(history) <= MAX_HISTORY
        and all(
            media_ok(_strings(item.get("images")), IMAGE_URL)
            and media_ok(_strings(item.get("videos")), VIDEO_URL)
            for item in history
        )
    )
    if not media_valid:
        return Expect("refused", "agent validation", prefix="Invalid request: ")
    prompt_error = Expect("refused", "prompt assembly", prefix="Error assembling prompt: ")
    if generation_type == "create":
        if mode == "video" and not videos:
            return prompt_error
    elif history:
        if not any(item["role"] == "user" for item in history):
            return prompt_error
    else:
        file_state = params.get("fileState")
        content = file_state.get("content") if isinstance(file_state, dict) else None
        if not (isinstance(content, str) and content.strip()):
            return prompt_error
    return Expect("generates", "valid params")


def _expect_resume(params: dict[str, Any]) -> Expect:
    generation_id = params.get("resumeGenerationId")
    after = params.get("afterSequence", 0)
    if not isinstance(generation_id, str) or not generation_id:
        return Expect(
            "refused",
            "resume id",
            exact="Invalid resume: resumeGenerationId must be a non-empty string",
        )
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        return Expect(
            "refused",
            "resume sequence",
            exact="Invalid resume: afterSequence must be a non-negative integer",
        )
    return Expect("refused", "resume of a generation that does not exist")


@dataclass
class WsSeen:
    frames: list[dict[str, Any]] = field(default_factory=list)
    close_code: int | None = None
    problem: str | None = None


async def exchange(session: aiohttp.ClientSession, url: str, case: WsCase) -> WsSeen:
    seen = WsSeen()
    opcode = aiohttp.WSMsgType.TEXT if case.opcode == "text" else aiohttp.WSMsgType.BINARY
    try:
        async with asyncio.timeout(EXCHANGE_TIMEOUT_S):
            async with session.ws_connect(url, max_msg_size=0) as ws:
                await ws.send_frame(case.data, opcode)
                async for message in ws:
                    if message.type != aiohttp.WSMsgType.TEXT:
                        continue
                    try:
                        decoded = json.loads(message.data)
                    except json.JSONDecodeError:
                        seen.problem = f"a frame that is not JSON: {_shape(message.data)!r}"
                        continue
                    if isinstance(decoded, dict):
                        seen.frames.append(decoded)
                    else:
                        seen.problem = f"a frame that is not an object: {_shape(message.data)!r}"
                seen.close_code = ws.close_code
    except TimeoutError:
        seen.problem = f"no close within {EXCHANGE_TIMEOUT_S:.0f} s (hang)"
    except (aiohttp.ClientError, ConnectionError) as exc:
        seen.problem = f"connection failed: {type(exc).__name__}"
    return seen


def judge_ws(expect: Expect, seen: WsSeen) -> str | None:
    """None when `seen` is what `expect` asks for, else what was wrong."""
    if seen.problem is not None:
        return seen.problem
    errors = [f for f in seen.frames if f.get("type") == "error"]
    summary = f"close {seen.close_code}, frames {[f.get('type') for f in seen.frames][-4:]}" + (
        f", error {_shape(str(errors[-1].get('value')))!r}" if errors else ""
    )
    if expect.kind == "generates" or (expect.kind == "clean" and seen.close_code == 1000):
        if seen.close_code != 1000 or errors:
            return f"valid params ({expect.why}) did not generate: {summary}"
        variant_errors = [f for f in seen.frames if f.get("type") == "variantError"]
        if variant_errors:
            return f"valid params: variantError {_shape(str(variant_errors[0].get('value')))!r}"
        if not any(f.get("type") == "variantComplete" for f in seen.frames):
            return f"valid params: closed 1000 without a variantComplete: {summary}"
        return None
    if seen.close_code != APP_ERROR or not errors:
        return f"{expect.why}: expected an error frame and close 4332, got {summary}"
    value = errors[-1].get("value")
    if not isinstance(value, str) or not value.strip():
        return f"{expect.why}: error frame without a message: {summary}"
    if seen.frames[-1] is not errors[-1]:
        return f"{expect.why}: frames after the error: {summary}"
    if expect.exact is not None:
        if value != expect.exact:
            return f"{expect.why}: expected {_shape(expect.exact)!r}, got {_shape(value)!r}"
        return None
    if expect.prefix is not None and not value.startswith(expect.prefix):
        return f"{expect.why}: expected {expect.prefix!r}…, got {_shape(value)!r}"
    if any(marker in value for marker in UNCLEAR):
        return f"{expect.why}: unclear error {_shape(value)!r}"
    return None


def retained_bytes(payload: bytes, variants: int) -> int:
    """What the agent may keep of a generation it started (see RETAINED_VARIANT_BYTES)."""
    return 2 * len(payload) + variants * RETAINED_VARIANT_BYTES if variants else 0


def ws_variants(seen: WsSeen) -> int:
    for frame in seen.frames:
        if frame.get("type") == "variantCount" and str(frame.get("value")).isdigit():
            return int(str(frame.get("value")))
    return 0


async def test_fuzz_websocket_params_frames(tmp_path: Path) -> None:
    findings = Findings()
    retained = 0

    async with (
        closed_port() as port,
        running_processes(tmp_path / "data", closed_port_env(port)) as suite,
        aiohttp.ClientSession() as session,
    ):

        async def check(case: WsCase) -> None:
            nonlocal retained
            expect = expect_ws(case)
            seen = await exchange(session, suite.ws_url, case)
            findings.outcomes[expect.kind] += 1
            retained += retained_bytes(case.data, ws_variants(seen))
            problem = judge_ws(expect, seen)
            if problem is not None:
                findings.add(problem, case.describe())

        await run_campaign(ws_cases, WARM_UP, 20_261, check)
        before = memory(suite)
        findings.outcomes.clear()
        retained = 0
        sent = await run_campaign(ws_cases, WS_FRAMES, 4_332, check)
        after = memory(suite)
        problems = [
            *findings.report(),
            *await health_problems(suite),
            *error_log_problems(suite),
            *memory_problems(before, after, {"agent": retained}),
        ]

    assert sent >= WS_FRAMES
    # The oracle's every branch was exercised, so the campaign reached past the first checks.
    assert findings.outcomes["refused"] >= WS_FRAMES // 2, findings.outcomes
    assert findings.outcomes["generates"] >= 20, findings.outcomes
    assert not problems, "\n".join([*problems, f"outcomes: {dict(findings.outcomes)}"])


# ---------------------------------------------------------------------------------------
# gRPC: inputs, oracle, judge

AGENT = "/s2c.agent.v1.AgentService/"
TOOLS = "/s2c.tools.v1.ToolService/"
AgentMethod = Literal["GenerateCode", "WatchGeneration", "GetGeneration", "CancelGeneration"]
REQUEST_TYPES: dict[str, type[Message]] = {
    "GenerateCode": pb.GenerateCodeRequest,
    "WatchGeneration": pb.WatchGenerationRequest,
    "GetGeneration": pb.GetGenerationRequest,
    "CancelGeneration": pb.CancelGenerationRequest,
    "ExecuteTool": tpb.ExecuteToolRequest,
}
STREAMING = frozenset({"GenerateCode", "WatchGeneration"})

INT32 = st.integers(-(2**31), 2**31 - 1)


def set_field(message: Message, name: str, value: object) -> None:
    # Open proto3 enums take any int32; the generated stubs only type the known ones.
    setattr(message, name, value)


def bad_enum(valid: int) -> st.SearchStrategy[int]:
    return INT32.filter(lambda v: not 0 <= v < valid)


bad_generation_ids = st.one_of(
    st.text(min_size=1, max_size=80).filter(lambda s: not GENERATION_ID.fullmatch(s)),
    st.integers(65, 30_000).map(lambda n: "g" * n),
)
bad_models = st.one_of(
    short_text,
    st.sampled_from(["", "local:", "LOCAL:x", "demo ", "gpt", "claude"]),
    st.integers(100, 20_000).map(lambda n: "m" * n),
).filter(lambda m: not model_ok(m))
bad_media = st.one_of(
    st.sampled_from(BAD_URLS), short_text, st.integers(100, 20_000).map(lambda n: "u" * n)
)


def _with_bad(
    good: st.SearchStrategy[str], bad: st.SearchStrategy[str]
) -> st.SearchStrategy[list[str]]:
    """A list of URLs with at least one bad one, or one too many good ones."""
    return st.one_of(
        st.builds(
            lambda head, wrong, tail: [*head, wrong, *tail],
            st.lists(good, max_size=3),
            bad,
            st.lists(st.one_of(good, bad), max_size=3),
        ),
        st.lists(good, min_size=MAX_IMAGES + 1, max_size=MAX_IMAGES + 5),
    )


good_images = st.sampled_from([PNG, LOOPBACK_HTTPS, "data:image/webp;base64,AAAA"])
good_videos = st.sampled_from(["data:video/mp4;base64,AAAA", LOOPBACK_HTTPS])
bad_image_lists = _with_bad(good_images, bad_media)
bad_video_lists = _with_bad(good_videos, bad_media)


@st.composite
def generate_requests(draw: st.DrawFn) -> pb.GenerateCodeRequest:
    """A valid request with one to three faults, and harmless noise elsewhere."""
    request = pb.GenerateCodeRequest(
        input_mode=pb.INPUT_MODE_TEXT,
        stack=pb.STACK_HTML_TAILWIND,
        prompt=pb.Prompt(text=draw(st.text(max_size=40))),
        design_system=draw(short_text),
        option_codes=draw(st.lists(short_text, max_size=2)),
        asset_base_url=draw(st.sampled_from(["", "http://127.0.0.1:9", "not a url"])),
        credentials=common_pb2.Credentials(openai_api_key=draw(short_text)),
    )
    faults = draw(st.lists(st.sampled_from(sorted(FAULTS)), min_size=1, max_size=3, unique=True))
    for fault in faults:
        FAULTS[fault](draw, request)
    return request


def _fault_history_size(draw: st.DrawFn, request: pb.GenerateCodeRequest) -> None:
    n = draw(st.integers(MAX_HISTORY + 1, MAX_HISTORY + 60))
    request.history.extend(pb.HistoryMessage(role=pb.ROLE_USER, text="x") for _ in range(n))


def _fault_history_role(draw: st.DrawFn, request: pb.GenerateCodeRequest) -> None:
    message = pb.HistoryMessage(text=draw(short_text))
    set_field(message, "role", draw(st.one_of(st.just(0), bad_enum(3))))
    request.history.append(message)


def _fault_history_media(draw: st.DrawFn, request: pb.GenerateCodeRequest) -> None:
    # Up to 200 messages of up to 20 bad images each: thousands of violations at once.
    messages = draw(st.one_of(st.integers(1, 3), st.integers(50, MAX_HISTORY)))
    per_message = draw(st.one_of(st.integers(1, 3), st.integers(10, MAX_IMAGES)))
    url = draw(bad_media)
    request.history.extend(
        pb.HistoryMessage(role=pb.ROLE_USER, text="x", images=[url] * per_message)
        for _ in range(messages)
    )


FAULTS: dict[str, Callable[[st.DrawFn, pb.GenerateCodeRequest], None]] = {
    "generation_id": lambda d, r: set_field(r, "generation_id", d(bad_generation_ids)),
    "generation_type": lambda d, r: set_field(r, "generation_type", d(bad_enum(3))),
    "input_mode": lambda d, r: set_field(r, "input_mode", d(bad_enum(4))),
    "stack": lambda d, r: set_field(r, "stack", d(bad_enum(7))),
    "prompt_images": lambda d, r: r.prompt.images.extend(d(bad_image_lists)),
    "prompt_videos": lambda d, r: r.prompt.videos.extend(d(bad_video_lists)),
    "history_size": _fault_history_size,
    "history_role": _fault_history_role,
    "history_media": _fault_history_media,
    "variant_count": lambda d, r: set_field(
        r,
        "variant_count",
        d(st.one_of(st.integers(-(2**31), -1), st.integers(MAX_VARIANTS + 1, 2**31 - 1))),
    ),
    "models": lambda d, r: r.models.extend(
        d(
            st.builds(
                lambda good, wrong: [*good, wrong],
                st.lists(st.sampled_from(["demo", *sorted(CATALOGUE)]), max_size=2),
                bad_models,
            )
        )
    ),
}


def agent_violations(request: pb.GenerateCodeRequest) -> set[str]:
    """The fields convert.request_from_proto must complain about (mirror of its rules)."""
    out: set[str] = set()
    if request.generation_id and not GENERATION_ID.fullmatch(request.generation_id):
        out.add("generation_id")
    for name, size in (("generation_type", 3), ("input_mode", 4), ("stack", 7)):
        if not 0 <= getattr(request, name) < size:
            out.add(name)
    out |= _media_violations(list(request.prompt.images), "prompt.images", IMAGE_URL)
    out |= _media_violations(list(request.prompt.videos), "prompt.videos", VIDEO_URL)
    if len(request.history) > MAX_HISTORY:
        out.add("history")
    for i, message in enumerate(request.history):
        if message.role not in (pb.ROLE_USER, pb.ROLE_ASSISTANT):
            out.add(f"history[{i}].role")
            continue
        out |= _media_violations(list(message.images), f"history[{i}].images", IMAGE_URL)
        out |= _media_violations(list(message.videos), f"history[{i}].videos", VIDEO_URL)
    if not 0 <= request.variant_count <= MAX_VARIANTS:
        out.add("variant_count")
    out |= {f"models[{i}]" for i, model in enumerate(request.models) if not model_ok(model)}
    return out


def _media_violations(urls: list[str], name: str, pattern: re.Pattern[str]) -> set[str]:
    out = {name} if len(urls) > MAX_IMAGES else set()
    return out | {
        f"{name}[{i}]"
        for i, url in enumerate(urls)
        if not (pattern.match(url) or url.startswith("https://"))
    }


@dataclass(frozen=True)
class RpcCase:
    method: str
    payload: bytes
    note: str = ""

    def describe(self) -> str:
        return f"{self.method}({self.note or 'bytes'}) {_clip(self.payload)}"


def typed(method: str, note: str = "") -> Callable[[Message], RpcCase]:
    return lambda message: RpcCase(method, message.SerializeToString(), note)


def mutate(data: bytes, where: int, byte: int, how: str) -> bytes:
    i = where % (len(data) + 1)
    if how == "cut":
        return data[:i]
    if how == "flip":
        return data[:i] + bytes([byte]) + data[i + 1 :]
    return data[:i] + bytes([byte, byte ^ 0xFF, byte]) + data[i:]


def raw_payloads(valid: st.SearchStrategy[Message]) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=64),
        st.builds(
            mutate,
            valid.map(lambda m: m.SerializeToString()),
            st.integers(0, 10**6),
            st.integers(0, 255),
            st.sampled_from(["cut", "flip", "insert"]),
        ),
    )


made_up_ids = st.one_of(
    st.text(max_size=40),
    st.text(alphabet="0123456789abcdef", min_size=32, max_size=32),
    st.integers(5_000, 40_000).map(lambda n: "g" * n),
)
agent_cases: st.SearchStrategy[RpcCase] = weighted(
    (12, generate_requests().map(typed("GenerateCode", "typed"))),
    (
        1,
        st.builds(
            lambda i, after: pb.WatchGenerationRequest(generation_id=i, after_sequence=after),
            made_up_ids,
            st.integers(0, 2**64 - 1),
        ).map(typed("WatchGeneration", "typed")),
    ),
    (
        1,
        st.builds(pb.GetGenerationRequest, generation_id=made_up_ids).map(
            typed("GetGeneration", "typed")
        ),
    ),
    (
        1,
        st.builds(pb.CancelGenerationRequest, generation_id=made_up_ids).map(
            typed("CancelGeneration", "typed")
        ),
    ),
    (3, st.builds(RpcCase, st.just("GenerateCode"), raw_payloads(generate_requests()))),
    *[
        (1, st.builds(RpcCase, st.just(method), raw_payloads(st.just(REQUEST_TYPES[method]()))))
        for method in ("WatchGeneration", "GetGeneration", "CancelGeneration")
    ],
)

struct_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**53), 2**53),
        st.floats(),
        short_text,
        st.text(max_size=2_000),
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(short_text, inner, max_size=4),
    max_leaves=8,
)
ARGUMENT_NAMES = (
    "content",
    "path",
    "old_text",
    "new_text",
    "count",
    "edits",
    "prompts",
    "image_urls",
    "prompt",
    "aspect_ratio",
    "asset_descriptions",
    "option_number",
    "asset_ids",
)


def to_struct(value: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


tool_names = weighted(
    (4, st.sampled_from(KNOWN_TOOLS)),
    (1, st.just("")),
    (2, short_text),
    (2, st.text(min_size=200, max_size=2_000)),
)
tool_requests = st.builds(
    lambda name, call_id, args, invalid, file, ctx: tpb.ExecuteToolRequest(
        call=tpb.ToolCall(id=call_id, name=name, arguments=to_struct(args), invalid_json=invalid),
        file=file,
        context=ctx,
    ),
    tool_names,
    st.one_of(st.text(max_size=40), st.integers(MAX_TOOL_ID - 4, 2_000).map(lambda n: "i" * n)),
    st.dictionaries(st.one_of(st.sampled_from(ARGUMENT_NAMES), short_text), struct_values),
    st.none() | st.text(max_size=40),
    st.none() | st.builds(common_pb2.FileState, path=short_text, content=st.text(max_size=300)),
    st.builds(
        tpb.ToolContext,
        input_images=st.lists(
            st.one_of(st.just(PNG), short_text, st.sampled_from(BAD_URLS)), max_size=3
        ),
        option_codes=st.lists(st.text(max_size=200), max_size=3),
        flags=st.builds(
            tpb.ToolFlags,
            image_generation_enabled=st.booleans(),
            asset_extraction_enabled=st.booleans(),
            has_input_images=st.booleans(),
        ),
        asset_base_url=st.sampled_from(["", "http://127.0.0.1:9", "not a url"]),
    ),
)
tool_cases: st.SearchStrategy[RpcCase] = weighted(
    (5, tool_requests.map(typed("ExecuteTool", "typed"))),
    (1, st.builds(RpcCase, st.just("ExecuteTool"), raw_payloads(tool_requests))),
)


@dataclass
class RpcSeen:
    code: grpc.StatusCode
    details: str = ""
    fields: list[str] = field(default_factory=list)
    responses: list[bytes] = field(default_factory=list)


def _same(data: bytes) -> bytes:
    return data


async def call(channel: grpc.aio.Channel, prefix: str, case: RpcCase) -> RpcSeen:
    """Sends the payload as it is, so malformed protobuf reaches the server."""
    seen = RpcSeen(grpc.StatusCode.OK)
    method = prefix + case.method
    try:
        if case.method in STREAMING:
            stream = channel.unary_stream(
                method, request_serializer=_same, response_deserializer=_same
            )(case.payload, timeout=EXCHANGE_TIMEOUT_S)
            async for response in stream:
                seen.responses.append(response)
        else:
            unary = channel.unary_unary(
                method, request_serializer=_same, response_deserializer=_same
            )
            seen.responses.append(await unary(case.payload, timeout=EXCHANGE_TIMEOUT_S))
    except grpc.aio.AioRpcError as exc:
        seen.code = exc.code()
        seen.details = exc.details() or ""
        if seen.code == grpc.StatusCode.INVALID_ARGUMENT:
            seen.fields = [v.field for v in bad_request_violations(exc)]
    return seen


def decode(case: RpcCase) -> Message | None:
    try:
        return REQUEST_TYPES[case.method].FromString(case.payload)
    except DecodeError:
        return None


def judge_rpc(case: RpcCase, seen: RpcSeen) -> tuple[str, str | None]:
    """(what the oracle expected, None or what was wrong)."""
    request = decode(case)
    where = f"{case.method}"
    if request is None:
        if seen.code != grpc.StatusCode.INVALID_ARGUMENT or not seen.details.strip():
            return "refused", f"{where} with undecodable bytes: {_status(seen)}"
        return "refused", None
    if isinstance(request, pb.GenerateCodeRequest):
        return _judge_fields(where, agent_violations(request), seen)
    if isinstance(request, tpb.ExecuteToolRequest):
        return _judge_tool(request, seen)
    # Watch/Get/Cancel of a generation nobody started.
    if seen.code not in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT):
        return "refused", f"{where} of a made-up id: {_status(seen)}"
    if not seen.details.strip():
        return "refused", f"{where} of a made-up id: {seen.code.name} without details"
    return "refused", None


def _judge_fields(where: str, expected: set[str], seen: RpcSeen) -> tuple[str, str | None]:
    if not expected:
        # Random bytes can decode to the same generation id twice; "already in use" is
        # then the right answer.
        if seen.code not in (grpc.StatusCode.OK, grpc.StatusCode.ALREADY_EXISTS):
            return "accepted", f"{where}: a valid request failed: {_status(seen)}"
        return "accepted", None
    if seen.code != grpc.StatusCode.INVALID_ARGUMENT:
        return "refused", f"{where}: expected INVALID_ARGUMENT, got {_status(seen)}"
    if not seen.fields:
        return "refused", f"{where}: INVALID_ARGUMENT without field violations: {_status(seen)}"
    # Past 20 violations the agent lists the first 20 and one "request" summary line,
    # so its error stays small enough for gRPC trailers.
    unexpected = sorted(set(seen.fields) - expected - {"request"})
    if unexpected:
        return "refused", f"{where}: violations on valid fields {unexpected[:3]}"
    return "refused", None


def _judge_tool(request: tpb.ExecuteToolRequest, seen: RpcSeen) -> tuple[str, str | None]:
    expected = set()
    if not request.call.name or len(request.call.name) > MAX_TOOL_NAME:
        expected.add("call.name")
    if len(request.call.id) > MAX_TOOL_ID:
        expected.add("call.id")
    if expected:
        return _judge_fields("ExecuteTool", expected, seen)
    if seen.code != grpc.StatusCode.OK or len(seen.responses) != 1:
        return "accepted", f"ExecuteTool: expected a result, got {_status(seen)}"
    response = tpb.ExecuteToolResponse.FromString(seen.responses[0])
    known = request.call.name in KNOWN_TOOLS
    if not known and response.ok:
        return "accepted", "ExecuteTool: an unknown tool succeeded"
    if not response.ok:
        error = response.result.fields.get("error")
        if error is None or not error.string_value.strip():
            return "accepted", f"ExecuteTool({'known' if known else 'unknown'}): ok=False, no error"
    return "accepted", None


def _status(seen: RpcSeen) -> str:
    return f"{seen.code.name} {_shape(seen.details)!r}"


async def metrics_tool_labels(service: Service) -> set[str]:
    """The `tool` label values of the tool worker's execution-time histogram."""
    ports = listening_ports(service.process.pid) - {service.port}
    assert len(ports) == 1, f"cannot tell the metrics port of {service.name}: {ports}"
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{ports.pop()}/metrics") as response:
            text = await response.text()
    labels = set()
    for line in text.splitlines():
        if line.startswith("s2c_tool_execution_seconds_count{"):
            match = re.search(r'tool="((?:[^"\\]|\\.)*)"', line)
            if match:
                labels.add(match.group(1))
    return labels


def rpc_variants(seen: RpcSeen) -> int:
    for data in seen.responses:
        event = pb.GenerationEvent.FromString(data)
        if event.HasField("variant_count"):
            return event.variant_count.count
    return 0


async def test_fuzz_grpc_requests(tmp_path: Path) -> None:
    findings = Findings()
    retained = 0

    async with (
        closed_port() as port,
        running_processes(tmp_path / "data", closed_port_env(port)) as suite,
        grpc.aio.insecure_channel(
            f"127.0.0.1:{suite.agent.port}", options=list(CHANNEL_OPTIONS)
        ) as agent,
        grpc.aio.insecure_channel(
            f"127.0.0.1:{suite.tools.port}", options=list(CHANNEL_OPTIONS)
        ) as tools,
    ):

        def checker(
            channel: grpc.aio.Channel, prefix: str
        ) -> Callable[[RpcCase], Coroutine[Any, Any, None]]:
            async def check(case: RpcCase) -> None:
                nonlocal retained
                seen = await call(channel, prefix, case)
                expected, problem = judge_rpc(case, seen)
                findings.outcomes[f"{case.method} {expected}"] += 1
                if case.method == "GenerateCode":
                    retained += retained_bytes(case.payload, rpc_variants(seen))
                if problem is not None:
                    findings.add(problem, case.describe())

            return check

        check_agent, check_tools = checker(agent, AGENT), checker(tools, TOOLS)
        await run_campaign(agent_cases, GRPC_WARM_UP, 50_051, check_agent)
        await run_campaign(tool_cases, GRPC_WARM_UP, 50_052, check_tools)
        before = memory(suite)
        findings.outcomes.clear()
        retained = 0
        agent_sent = await run_campaign(agent_cases, AGENT_REQUESTS, 51, check_agent)
        tools_sent = await run_campaign(tool_cases, TOOL_REQUESTS, 52, check_tools)
        after = memory(suite)
        labels = await metrics_tool_labels(suite.tools)
        problems = [
            *findings.report(),
            *await health_problems(suite),
            *error_log_problems(suite),
            *memory_problems(before, after, {"agent": retained}),
        ]
    # One series per real tool (and at most one for "not a tool"): a series per name a
    # caller made up is memory and /metrics output that grow without bound.
    made_up = labels - set(KNOWN_TOOLS)
    if len(made_up) > 1:
        problems.append(
            f"the tool worker's s2c_tool_execution_seconds has {len(made_up)} series for "
            f"tool names that are not tools (e.g. {_clip(min(made_up, key=len), 60)}): "
            "unbounded label cardinality"
        )

    assert agent_sent >= AGENT_REQUESTS
    assert tools_sent >= TOOL_REQUESTS
    assert findings.outcomes["GenerateCode refused"] >= AGENT_REQUESTS // 2, findings.outcomes
    assert findings.outcomes["ExecuteTool accepted"] >= TOOL_REQUESTS // 4, findings.outcomes
    assert not problems, "\n".join([*problems, f"outcomes: {dict(findings.outcomes)}"])
