"""What the fuzz campaigns (`test_fuzz.py`) send: hostile JSON values, WebSocket
params frames and raw frames, gRPC requests to the agent and the tool worker.

The strategies know the shapes of the inputs (field names, vocabulary), never which
values the validators accept: most fields are plausible most of the time and hostile
some of the time, and sizes go well past any sane limit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from google.protobuf import struct_pb2
from google.protobuf.message import Message
from hypothesis import strategies as st
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2
from s2c.tools.v1 import tool_service_pb2 as tpb

from services.tools.definitions import TOOL_DEFINITIONS
from tests.e2e.fuzzing import clip
from tests.suite import create_params, png_data_url

T = TypeVar("T")

PNG = png_data_url(8, 8)
# An https URL; the demo model never fetches it, and anything that did would stay on
# this machine.
LOOPBACK_HTTPS = "https://127.0.0.1:9/picture.png"
BAD_URLS = (
    "http://127.0.0.1:9/x.png",
    "javascript:alert(1)",
    "data:text/html;base64,PGgxPmhpPC9oMT4=",
    "data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=",
    "data:image/png,not-base64",
    "file:///etc/passwd",
    " data:image/png;base64,AAAA",
)
# "Many" is well past any sane limit, whatever the limits are.
MANY = st.integers(20, 30)
KNOWN_TOOLS = tuple(d.name for d in TOOL_DEFINITIONS)

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


# ---------------------------------------------------------------------------------------
# WebSocket: inputs

media = st.one_of(
    st.sampled_from([PNG, LOOPBACK_HTTPS, "data:video/mp4;base64,AAAA", *BAD_URLS]),
    short_text,
    scalars,
)
media_lists = weighted(
    (4, st.lists(media, max_size=3)),
    (1, MANY.flatmap(lambda n: st.just([PNG] * n))),
    (1, st.integers(10_000, 2_000_000).map(lambda n: ["x" * n])),
    (1, hostile),
)
messages = either(
    st.fixed_dictionaries(
        {"role": either(st.sampled_from(["user", "assistant", "system"]))},
        optional={"text": either(short_text), "images": media_lists, "videos": media_lists},
    )
)
FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "generatedCodeConfig": either(st.sampled_from(["html_tailwind", "react_tailwind", "cobol"])),
    "inputMode": either(st.sampled_from(["image", "video", "text", "audio"])),
    "generationType": either(st.sampled_from(["create", "update", "delete"])),
    "prompt": either(
        st.fixed_dictionaries(
            {},
            optional={"text": either(short_text), "images": media_lists, "videos": media_lists},
        )
    ),
    "history": weighted(
        (6, st.lists(messages, max_size=4)),
        (1, st.integers(190, 230).map(lambda n: [{"role": "user", "text": "x"}] * n)),
        (1, hostile),
    ),
    "fileState": either(
        st.fixed_dictionaries(
            {}, optional={"content": either(st.just("<html><body>hi</body></html>"))}
        )
    ),
    "optionCodes": either(st.lists(short_text, max_size=2)),
    "codeGenerationModel": either(short_text),
    "openAiApiKey": either(short_text),
    "resumable": hostile,
    "editorTheme": hostile,
}


@st.composite
def params_values(draw: st.DrawFn) -> dict[str, Any]:
    """The upstream UI's params with up to three fields replaced, dropped or added."""
    params = create_params(inputMode=draw(st.sampled_from(["image", "text"])))
    for name in draw(st.lists(st.sampled_from(sorted(FIELDS)), max_size=3, unique=True)):
        if draw(st.integers(0, 5)) == 0:
            params.pop(name, None)
        else:
            params[name] = draw(FIELDS[name])
    return params


@dataclass(frozen=True)
class WsCase:
    opcode: Literal["text", "binary"]
    data: bytes

    def describe(self) -> str:
        return f"{self.opcode} frame {clip(self.data)}"


def text_case(value: object, ensure_ascii: bool = True) -> WsCase:
    return WsCase("text", encode_json(value, ensure_ascii).encode())


def broken_json(text: str, cut: int, junk: str) -> WsCase:
    i = cut % (len(text) + 1)
    return WsCase("text", (text[:i] + junk).encode())


resumes = st.fixed_dictionaries(
    {"resumeGenerationId": either(st.text(alphabet="0123456789abcdef", max_size=32))},
    optional={"afterSequence": either(st.integers(0, 10**6)), "generatedCodeConfig": hostile},
)
# Hypothesis favours the first entries of a sampled_from: the costly inputs (those
# that start a generation) come last.
ws_cases: st.SearchStrategy[WsCase] = weighted(
    (2, st.builds(text_case, resumes, st.booleans())),
    (1, st.builds(lambda p, v: text_case({**p, "prompt": v}), params_values(), unparseable)),
    (1, st.builds(text_case, hostile, st.booleans())),
    (
        1,
        st.builds(
            broken_json,
            st.builds(encode_json, params_values()),
            st.integers(0, 10**6),
            st.sampled_from(["", "}", ",", '"', "\\", "\ufeff", "NaN", "'"]),
        ),
    ),
    (
        1,
        st.sampled_from(["", " ", "\ufeff{}", "{'a': 1}", "[1,]", "tru", "\x00"]).map(
            lambda text: WsCase("text", text.encode())
        ),
    ),
    (1, st.text(max_size=200).map(lambda text: WsCase("text", text.encode()))),
    (1, st.integers(1, 300_000).map(lambda n: WsCase("text", b"[" * n))),  # never closed
    (1, st.binary(max_size=256).map(lambda data: WsCase("text", b"\xff" + data))),  # not UTF-8
    (1, st.binary(max_size=256).map(lambda data: WsCase("binary", data))),
    (1, st.builds(lambda value: WsCase("binary", encode_json(value).encode()), params_values())),
    (12, st.builds(text_case, params_values(), st.booleans())),
)


# ---------------------------------------------------------------------------------------
# gRPC: inputs

AGENT = "/s2c.agent.v1.AgentService/"
TOOLS = "/s2c.tools.v1.ToolService/"
REQUEST_TYPES: dict[str, type[Message]] = {
    "GenerateCode": pb.GenerateCodeRequest,
    "WatchGeneration": pb.WatchGenerationRequest,
    "GetGeneration": pb.GetGenerationRequest,
    "CancelGeneration": pb.CancelGenerationRequest,
    "ExecuteTool": tpb.ExecuteToolRequest,
}
STREAMING = frozenset({"GenerateCode", "WatchGeneration"})
# Requests whose INVALID_ARGUMENT must say which fields are wrong.
FIELD_CHECKED = frozenset({"GenerateCode", "ExecuteTool"})
INT32 = st.integers(-(2**31), 2**31 - 1)


def enums(size: int) -> st.SearchStrategy[int]:
    """Mostly a known value of an open proto3 enum of `size` members, sometimes any int32."""
    return weighted((6, st.integers(1, size - 1)), (1, st.just(0)), (1, INT32))


urls = st.lists(
    weighted(
        (4, st.sampled_from([PNG, LOOPBACK_HTTPS])), (1, st.sampled_from(BAD_URLS)), (1, short_text)
    ),
    max_size=3,
) | MANY.flatmap(lambda n: st.just([PNG] * n))
made_up_ids = st.one_of(
    st.text(max_size=40),
    st.text(alphabet="0123456789abcdef", min_size=32, max_size=32),
    st.integers(5_000, 40_000).map(lambda n: "g" * n),
)


M = TypeVar("M", bound=Message)


def with_enums(message: M, **values: int) -> M:
    # Open proto3 enums take any int32; the generated stubs only type the known ones.
    for name, value in values.items():
        setattr(message, name, value)
    return message


history_messages = st.builds(
    lambda text, images, role: with_enums(pb.HistoryMessage(text=text, images=images), role=role),
    short_text,
    urls,
    enums(3),
)
# Around MAX_HISTORY (200): a few drawn messages repeated to the length. Drawing each of
# ~200 messages afresh made these requests most of the campaign's drawing time, and
# what varies per message is already covered by the short histories above.
long_histories = st.builds(
    lambda few, n: [few[i % len(few)] for i in range(n)],
    st.lists(history_messages, min_size=1, max_size=3),
    st.integers(190, 230),
)


@st.composite
def generate_requests(draw: st.DrawFn) -> pb.GenerateCodeRequest:
    """Each field plausible most of the time and hostile some of the time."""
    history = draw(weighted((8, st.lists(history_messages, max_size=3)), (1, long_histories)))
    request = pb.GenerateCodeRequest(
        generation_id=draw(weighted((6, st.just("")), (1, made_up_ids))),
        prompt=pb.Prompt(text=draw(st.text(max_size=40)), images=draw(urls), videos=draw(urls)),
        history=history,
        variant_count=draw(weighted((6, st.integers(0, 4)), (1, INT32))),
        models=draw(st.lists(weighted((4, st.just("demo")), (1, short_text)), max_size=2)),
        design_system=draw(short_text),
        option_codes=draw(st.lists(short_text, max_size=2)),
        # No credentials: their shape follows the provider registry, which has its own
        # tests; the key fields of the params frames are fuzzed on the WebSocket.
        asset_base_url=draw(st.sampled_from(["", "http://127.0.0.1:9", "not a url"])),
    )
    with_enums(
        request, generation_type=draw(enums(3)), input_mode=draw(enums(4)), stack=draw(enums(7))
    )
    return request


# A request the agent accepts: the campaign must reach the accepted path often enough to
# check it (`generate_requests` gets every field right at once only ~1-3 % of the time,
# and how often varied with the draw: 13 to 46 in 2 000 cases).
plausible_requests = st.builds(
    lambda text, stack, count, models: with_enums(
        pb.GenerateCodeRequest(prompt=pb.Prompt(text=text), variant_count=count, models=models),
        generation_type=pb.GENERATION_TYPE_CREATE,
        input_mode=pb.INPUT_MODE_TEXT,
        stack=stack,
    ),
    st.text(min_size=1, max_size=40).filter(str.strip),
    st.integers(1, 6),
    st.integers(1, 4),
    st.lists(st.just("demo"), max_size=2),
)


@dataclass(frozen=True)
class RpcCase:
    method: str
    payload: bytes
    note: str = ""

    def describe(self) -> str:
        return f"{self.method}({self.note or 'bytes'}) {clip(self.payload)}"


def typed(method: str) -> Callable[[Message], RpcCase]:
    return lambda message: RpcCase(method, message.SerializeToString(), "typed")


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


agent_cases: st.SearchStrategy[RpcCase] = weighted(
    (12, generate_requests().map(typed("GenerateCode"))),
    (1, plausible_requests.map(typed("GenerateCode"))),
    (
        1,
        st.builds(
            lambda i, after: pb.WatchGenerationRequest(generation_id=i, after_sequence=after),
            made_up_ids,
            st.integers(0, 2**64 - 1),
        ).map(typed("WatchGeneration")),
    ),
    (1, st.builds(pb.GetGenerationRequest, generation_id=made_up_ids).map(typed("GetGeneration"))),
    (
        1,
        st.builds(pb.CancelGenerationRequest, generation_id=made_up_ids).map(
            typed("CancelGeneration")
        ),
    ),
    (3, st.builds(RpcCase, st.just("GenerateCode"), raw_payloads(generate_requests()))),
    *[
        (1, st.builds(RpcCase, st.just(method), raw_payloads(st.just(REQUEST_TYPES[method]()))))
        for method in ("WatchGeneration", "GetGeneration", "CancelGeneration")
    ],
)
struct_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.floats(), short_text),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(short_text, inner, max_size=4),
    max_leaves=8,
)
ARGUMENT_NAMES = ("content", "path", "old_text", "new_text", "edits", "prompts", "image_urls")


def to_struct(value: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


tool_requests = st.builds(
    lambda name, call_id, args, invalid, file, ctx: tpb.ExecuteToolRequest(
        call=tpb.ToolCall(id=call_id, name=name, arguments=to_struct(args), invalid_json=invalid),
        file=file,
        context=ctx,
    ),
    weighted((4, st.sampled_from(KNOWN_TOOLS)), (2, short_text), (1, st.text(max_size=2_000))),
    st.one_of(st.text(max_size=40), st.integers(200, 2_000).map(lambda n: "i" * n)),
    st.dictionaries(st.one_of(st.sampled_from(ARGUMENT_NAMES), short_text), struct_values),
    st.none() | st.text(max_size=40),
    st.none() | st.builds(common_pb2.FileState, path=short_text, content=st.text(max_size=300)),
    st.builds(
        tpb.ToolContext,
        input_images=urls,
        option_codes=st.lists(st.text(max_size=200), max_size=3),
        asset_base_url=st.sampled_from(["", "http://127.0.0.1:9", "not a url"]),
    ),
)
tool_cases: st.SearchStrategy[RpcCase] = weighted(
    (5, tool_requests.map(typed("ExecuteTool"))),
    (1, st.builds(RpcCase, st.just("ExecuteTool"), raw_payloads(tool_requests))),
)
