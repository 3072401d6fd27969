from __future__ import annotations

import asyncio
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # a dev dependency (check-jsonschema) without stubs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.common.credentials import Credentials, Endpoint
from services.common.images import ImageDecoder, ImageLimits
from services.tools.asset_store import AssetStore
from services.tools.definitions import EDIT_IMAGE_ASPECT_RATIOS, TOOL_DEFINITIONS
from services.tools.extract_assets import extract_assets_handler
from services.tools.file_tools import (
    PATH_RULE,
    create_file,
    edit_file,
    file_tool_handlers,
    path_problem,
)
from services.tools.image_tools import image_tool_handlers
from services.tools.runtime import ToolRuntime
from services.tools.save_assets import asset_tool_handlers
from services.tools.settings import DEFAULT_TOOL_TIMEOUTS_S, ToolsSettings
from services.tools.types import FileState, ToolCall, ToolContext, ToolFlags, ToolOutcome
from services.tools.validation import (
    HANDLER_CHECKED,
    MAX_REPORTED,
    Violation,
    unsupported_keywords,
    validate,
)
from services.tools.worker import ToolWorker

SCHEMAS = {d.name: d.input_schema for d in TOOL_DEFINITIONS}
CTX = ToolContext()
FILE = FileState("index.html", "<html><body>Hello</body></html>")
MB = 1024 * 1024

VALID: dict[str, list[dict[str, Any]]] = {
    "create_file": [{"content": "<html></html>"}, {"path": "index.html", "content": "<p>x</p>"},
                    {"path": None, "content": "<p>x</p>", "extra": 1}],
    "edit_file": [
        {"old_text": "a", "new_text": "b"}, {"old_text": "a", "new_text": "b", "count": -1.0},
        {"edits": [{"old_text": "a", "new_text": "", "count": 2}]},
        {"path": None, "old_text": None, "new_text": None, "count": None, "edits": None},
    ],
    "generate_images": [{"prompts": ["a red fox"]}, {"prompts": []}],
    "remove_background": [{"image_urls": ["https://example.test/a.png"]}],
    "edit_image": [{"prompt": "make it blue", "image_urls": ["https://x.test/a.png"],
                    "aspect_ratio": r} for r in (*EDIT_IMAGE_ASPECT_RATIOS, None)],
    "extract_assets": [{"asset_descriptions": ["the logo, top left"]}],
    "screenshot_preview": [{}, {"anything": [1, 2]}],
    "compare_with_reference": [{}, {"image_number": 1}, {"image_number": 2.0},
                               {"image_number": None}],
    "check_accessibility": [{}, {"viewport_width": 390}, {"viewport_width": None}],
    "save_assets": [{"asset_ids": ["tmp_asset_0123456789abcdef01234567"]}],
    "retrieve_option": [{"option_number": 2}, {"option_number": 2.0}],
}  # fmt: skip

INVALID: list[tuple[str, dict[str, Any], str]] = [
    ("create_file", {"content": "x", "path": 5}, "/path: expected string, got integer"),
    ("create_file", {}, "/content: is required"),
    ("compare_with_reference", {"image_number": "1"}, "/image_number: expected integer, got "
     "string"),
    ("compare_with_reference", {"image_number": 1.5}, "/image_number: expected integer, got "
     "number"),
    ("create_file", {"content": None}, "/content: is required and may not be null"),
    ("edit_file", {"new_text": ["x"]}, "/new_text: expected string, got array"),
    ("edit_file", {"count": 1.5}, "/count: expected integer, got number"),
    ("edit_file", {"count": True}, "/count: expected integer, got boolean"),
    ("edit_file", {"edits": ["x", {}]}, "/edits/0: expected object, got string; "
     "/edits/1/old_text: is required; /edits/1/new_text: is required"),
    ("edit_file", {"edits": [{"old_text": "a", "new_text": {}}]}, "/edits/0/new_text: expected "
     "string, got object"),
    ("generate_images", {"prompts": "x"}, "/prompts: expected array, got string"),
    ("generate_images", {"prompts": ["ok", 3, None]}, "/prompts/1: expected string, got integer; "
     "/prompts/2: expected string, got null"),
    ("remove_background", {"image_urls": [["a"]]}, "/image_urls/0: expected string, got array"),
    ("edit_image", {"prompt": "p", "image_urls": ["u"], "aspect_ratio": "21:9"}, "/aspect_ratio: "
     f"must be one of {', '.join(json.dumps(r) for r in EDIT_IMAGE_ASPECT_RATIOS)}; got \"21:9\""),
    ("edit_image", {"prompt": "p", "image_urls": ["u"], "aspect_ratio": 1}, "/aspect_ratio: "
     "expected string, got integer"),
    ("extract_assets", {"asset_descriptions": [{}]}, "/asset_descriptions/0: expected string, got "
     "object"),
    ("save_assets", {"asset_ids": [False]}, "/asset_ids/0: expected string, got boolean"),
    ("retrieve_option", {"option_number": "2"}, "/option_number: expected integer, got string"),
]  # fmt: skip


# -- the validator -------------------------------------------------------------------------


def test_definitions_use_only_the_supported_subset() -> None:
    assert {name: unsupported_keywords(schema) for name, schema in SCHEMAS.items()} == {
        name: set() for name in SCHEMAS
    }
    schema = {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "string", "minLength": 1}}},
        "additionalProperties": {"oneOf": []},
        "if": {},
    }
    assert unsupported_keywords(schema) == {"minLength", "oneOf", "if"}
    assert unsupported_keywords({"type": ["string", "decimal"]}) == {"type: decimal"}


@pytest.mark.parametrize(("name", "args"), [(n, a) for n, cases in VALID.items() for a in cases])
def test_valid_examples_pass(name: str, args: dict[str, Any]) -> None:
    assert validate(SCHEMAS[name], args) == []


@pytest.mark.parametrize(("name", "args", "expected"), INVALID)
def test_invalid_examples_fail_at_the_right_pointer(
    name: str, args: dict[str, Any], expected: str
) -> None:
    assert "; ".join(str(v) for v in validate(SCHEMAS[name], args)) == expected


@pytest.mark.parametrize("name", SCHEMAS)
def test_null_counts_as_absent_for_every_optional_property(name: str) -> None:
    schema = SCHEMAS[name]
    optional = set(schema["properties"]) - set(schema.get("required", []))
    assert validate(schema, {**VALID[name][0], **dict.fromkeys(optional)}) == []


def test_the_supported_subset() -> None:
    schema = {
        "type": "object", "required": ["n"], "additionalProperties": {"type": "string"},
        "properties": {"n": {"type": ["integer", "null"]}, "flag": {"enum": [True, 1, "x"]},
                       "a/b~": {"type": "array", "items": {"type": "number"}}},
    }  # fmt: skip
    assert validate(schema, {"n": None}) == []  # nullable by its type list, so null is a value
    assert validate(schema, {}) == [Violation("/n", "is required")]
    assert validate(schema, {"n": 2.0, "a/b~": [1, 2.5], "other": "s", "gone": None}) == []
    assert validate(schema, {"n": "1", "a/b~": [math.nan, True], "other": 1}) == [
        Violation("/n", "expected integer or null, got string"),
        Violation("/a~1b~0/0", "expected number, got non-finite number"),
        Violation("/a~1b~0/1", "expected number, got boolean"),
        Violation("/other", "expected string, got integer"),
    ]
    assert validate(schema, {"n": 1, "flag": 1.0}) == []
    assert [v.pointer for v in validate(schema, {"n": 1, "flag": False})] == ["/flag"]
    closed = {"type": "object", "properties": {"a": {}}, "additionalProperties": False}
    assert str(*validate(closed, {"a": [], "b": 1})) == "/b: is not allowed (allowed properties: a)"
    assert validate({"type": "object"}, []) == [Violation("", "expected object, got array")]
    assert str(Violation("", "expected object, got array")) == "(root): expected object, got array"


def _without_optional_nulls(schema: dict[str, Any], value: Any) -> Any:
    """The value as JSON Schema proper sees it once null means "absent" for optional keys."""
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_without_optional_nulls(schema["items"], v) for v in value]
    if not (isinstance(value, dict) and schema.get("type") == "object"):
        return value
    props, required = schema.get("properties", {}), schema.get("required", [])
    kept = {k: v for k, v in value.items() if v is not None or k in required}
    return {k: _without_optional_nulls(props.get(k, {}), v) for k, v in kept.items()}


def _near(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values close to `schema`: mostly shaped like it, with wrong types mixed in."""
    json_scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3) | st.text()
    wrong = st.recursive(
        json_scalars, lambda c: st.lists(c, max_size=2) | st.dictionaries(st.text(), c, max_size=2)
    )
    kind = schema.get("type")
    if kind == "object":
        parts = {k: _near(v) for k, v in schema.get("properties", {}).items()}
        shaped: st.SearchStrategy[Any] = st.fixed_dictionaries({}, optional=parts)
    elif kind == "array":
        shaped = st.lists(_near(schema.get("items", {})), max_size=3)
    elif "enum" in schema:
        shaped = st.sampled_from(schema["enum"]) | st.text(max_size=4)
    elif kind == "integer":
        shaped = st.integers(-5, 5) | st.integers(-5, 5).map(float)
    else:
        shaped = st.text(max_size=4)
    return shaped | shaped | wrong


# Built once per tool: building the strategy (and the reference validator) in every
# example was most of the test's time.
_NEAR_VALUES = {name: _near(schema) for name, schema in SCHEMAS.items()}
_REFERENCES = {name: jsonschema.Draft202012Validator(schema) for name, schema in SCHEMAS.items()}


# 120 values a tool (1,080 in all) each CI run: hypothesis draws afresh every run, so the
# campaigns add up across runs.
@pytest.mark.parametrize("name", SCHEMAS)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_verdicts_match_a_reference_validator(name: str, data: st.DataObject) -> None:
    schema = SCHEMAS[name]
    value = data.draw(_NEAR_VALUES[name])
    expected = _REFERENCES[name].is_valid(_without_optional_nulls(schema, value))
    assert (validate(schema, value) == []) is expected


def test_every_handler_checked_location_exists_in_its_schema() -> None:
    for tool, patterns in HANDLER_CHECKED.items():
        for pattern in patterns:
            node = SCHEMAS[tool]
            for part in pattern.strip("/").split("/"):
                node = node["items"] if part == "*" else node["properties"][part]
            assert node, (tool, pattern)


# -- the runtime: ordering, then timeouts --------------------------------------------------


@pytest.fixture
def runtime(tmp_path: Path) -> ToolRuntime:
    store = AssetStore(tmp_path)
    handlers = {**file_tool_handlers(), **image_tool_handlers(store), **asset_tool_handlers(store)}
    return ToolRuntime(
        {**handlers, "extract_assets": extract_assets_handler(store, ImageDecoder(ImageLimits()))}
    )


_CONTENT = ("create_file requires non-empty content", "Missing content")
_OLD_TEXT = ("edit_file requires old_text", "Missing old_text")
_PROMPTS = ("generate_images requires a non-empty prompts list", "Missing prompts")
_GEN_KEY = ("No API key available for image generation.", "Missing image generation API key")
_BG_KEY = ("Background removal requires REPLICATE_API_KEY.", "Missing Replicate API key")
_EDIT_KEY = ("Image editing requires REPLICATE_API_KEY.", "Missing Replicate API key")
_GEMINI_KEY = ("Asset extraction requires GEMINI_API_KEY.", "Missing Gemini API key")
_ASSET_IDS = ("save_assets requires a non-empty asset_ids list", "Missing asset_ids")
_OPTION = ("retrieve_option requires option_number", "Missing option_number")
UPSTREAM_TEXTS: list[tuple[str, dict[str, Any], tuple[str, str]]] = [
    ("create_file", {}, _CONTENT),
    ("create_file", {"content": 42}, _CONTENT),
    ("create_file", {"content": ""}, _CONTENT),
    ("edit_file", {"edits": "old->new"}, ("edits must be a list", "Invalid edits payload")),
    ("edit_file", {"old_text": 7, "new_text": "x"}, _OLD_TEXT),
    ("edit_file", {"edits": [{"old_text": None, "new_text": "x"}]}, _OLD_TEXT),
    ("edit_file", {"old_text": "Hi", "count": "2x"}, ("count must be an integer", "Invalid count")),
    ("generate_images", {}, _PROMPTS),
    ("generate_images", {"prompts": "x"}, _PROMPTS),
    ("generate_images", {"prompts": None}, _PROMPTS),
    ("generate_images", {"prompts": [" "]}, ("No valid prompts provided", "No valid prompts")),
    ("generate_images", {"prompts": ["a fox"]}, _GEN_KEY),
    ("remove_background", {}, _BG_KEY),
    ("edit_image", {"prompt": "p", "images": ["https://x.test/a.png"]}, _EDIT_KEY),
    ("extract_assets", {"descriptions": ["logo"]}, _GEMINI_KEY),
    ("save_assets", {"asset_ids": "tmp"}, _ASSET_IDS),
    ("retrieve_option", {"option_number": True}, _OPTION),
]  # fmt: skip


@pytest.mark.parametrize(("name", "args", "texts"), UPSTREAM_TEXTS)
async def test_upstream_texts_still_win_where_they_apply(
    runtime: ToolRuntime, name: str, args: dict[str, Any], texts: tuple[str, str]
) -> None:
    outcome = await runtime.execute(ToolCall("call-1", name, args), FILE, CTX)
    assert outcome.ok is False
    assert (outcome.result, outcome.summary) == ({"error": texts[0]}, {"error": texts[1]})


async def test_handler_leniency_survives(runtime: ToolRuntime) -> None:
    for args in (
        {"edits": {}, "old_text": "Hello", "new_text": "Bye", "count": "1"},
        {"path": None, "old_text": "Hello", "new_text": "Bye", "count": None, "edits": None},
    ):
        outcome = await runtime.execute(ToolCall("", "edit_file", args), FILE, CTX)
        assert outcome.updated_file == FileState("index.html", "<html><body>Bye</body></html>")
    ctx = ToolContext(option_codes=("<p>1</p>", "<p>2</p>"))
    outcome = await runtime.execute(
        ToolCall("", "retrieve_option", {"option_number": "2"}), None, ctx
    )
    assert outcome.result == {"option_number": 2, "code": "<p>2</p>"}
    outcome = await runtime.execute(
        ToolCall("", "create_file", {"content": "<p>x</p>", "path": None}), None, CTX
    )
    assert outcome.updated_file == FileState("index.html", "<p>x</p>")


@pytest.mark.parametrize(
    ("name", "args", "pointers"),
    [
        ("create_file", {"content": "<p>x</p>", "path": 5}, "/path"),
        ("edit_file", {"old_text": "Hello", "new_text": ["Bye"]}, "/new_text"),
        ("edit_file", {"edits": ["Hello"]}, "/edits/0"),
        ("generate_images", {"prompts": ["a fox", 1]}, "/prompts/1"),
        ("remove_background", {"image_urls": [3]}, "/image_urls/0"),
        ("edit_image", {"prompt": "p", "image_urls": ["u"], "aspect_ratio": "4"}, "/aspect_ratio"),
        ("save_assets", {"asset_ids": [1, "tmp"]}, "/asset_ids/0"),
        # Both broken: the report lists the handler-checked problem too, so one retry fixes all.
        ("create_file", {"content": 5, "path": 5}, "/content /path"),
        ("edit_file", {"count": "2", "new_text": 1, "old_text": "Hello"}, "/count /new_text"),
    ],
)  # fmt: skip
async def test_schema_violations_are_refused_before_the_tool_runs(
    runtime: ToolRuntime, name: str, args: dict[str, Any], pointers: str
) -> None:
    # With a key, a call the schema let through would go to the (unreachable) network.
    keyed = ToolContext(credentials=Credentials.of(replicate=Endpoint("r8_test")))
    outcome = await runtime.execute(ToolCall("call-1", name, args), FILE, keyed)
    assert outcome.ok is False
    assert outcome.summary == {"error": "Invalid arguments"}
    assert [v["pointer"] for v in outcome.result["INVALID_ARGUMENTS"]] == pointers.split()
    first = pointers.split()[0]
    assert outcome.result["error"].startswith(f"Invalid arguments for {name}: {first}: ")
    assert outcome.updated_file is None


async def test_the_invalid_arguments_result_shape(runtime: ToolRuntime) -> None:
    call = ToolCall("c", "create_file", {"content": "x", "path": 5})
    outcome = await runtime.execute(call, None, CTX)
    assert outcome.result == {
        "error": "Invalid arguments for create_file: /path: expected string, got integer",
        "INVALID_ARGUMENTS": [{"pointer": "/path", "message": "expected string, got integer"}],
    }
    many = await runtime.execute(ToolCall("c", "save_assets", {"asset_ids": [0] * 30}), None, CTX)
    assert len(many.result["INVALID_ARGUMENTS"]) == MAX_REPORTED
    assert many.result["error"].endswith(f"; and {30 - MAX_REPORTED} more")


async def test_earlier_checks_come_before_the_schema() -> None:
    calls: list[dict[str, Any]] = []

    async def tool(args: dict[str, Any], file: FileState | None, ctx: ToolContext) -> ToolOutcome:
        calls.append(args)
        return ToolOutcome(True, {}, {})

    rt = ToolRuntime({"generate_images": tool, "probe": tool})
    bad = {"prompts": [1]}
    broken = await rt.execute(ToolCall("c", "generate_images", bad, invalid_json="{"), None, CTX)
    assert broken.summary == {"error": "Invalid JSON tool arguments"}
    off = ToolContext(flags=ToolFlags(image_generation_enabled=False))
    disabled = await rt.execute(ToolCall("c", "generate_images", bad), None, off)
    assert disabled.result == {"error": "Image generation is disabled."}
    unknown = await rt.execute(ToolCall("c", "nope", bad), None, CTX)
    assert unknown.result == {"error": "Unknown tool: nope"}
    refused = await rt.execute(ToolCall("c", "generate_images", bad), None, CTX)
    assert refused.summary == {"error": "Invalid arguments"}
    # A tool without a canonical definition has no schema to be held to.
    assert (await rt.execute(ToolCall("c", "probe", bad), None, CTX)).ok is True
    assert calls == [bad]


@pytest.mark.parametrize("call_id", ["call-1", ""])
async def test_a_timeout_cancels_the_handler(call_id: str) -> None:
    never = asyncio.Event()
    seen: list[BaseException] = []

    async def stuck(args: dict[str, Any], file: FileState | None, ctx: ToolContext) -> ToolOutcome:
        try:
            await never.wait()
        except BaseException as exc:
            seen.append(exc)
            raise
        return ToolOutcome(True, {}, {})

    rt = ToolRuntime({"probe": stuck}, timeouts_s={"probe": 0.05}, default_timeout_s=600)
    outcome = await rt.execute(ToolCall(call_id, "probe", {}), None, CTX)
    assert outcome.ok is False
    assert outcome.result == {"error": "probe timed out after 0.05 s"}
    assert outcome.summary == {"error": "Timed out"}
    assert [type(exc) for exc in seen] == [asyncio.CancelledError]


async def test_a_tools_own_timeout_error_is_an_ordinary_failure() -> None:
    async def slow_api(args: dict[str, Any], file: FileState | None, ctx: ToolContext) -> Any:
        raise TimeoutError("Inference timed out")

    outcome = await ToolRuntime({"probe": slow_api}).execute(ToolCall("", "probe", {}), None, CTX)
    assert outcome.result == {"error": "probe failed: Inference timed out"}


def test_timeout_defaults_and_configuration() -> None:
    rt = ToolRuntime({})
    assert [rt.timeout_for(n) for n in ("create_file", "edit_file", "retrieve_option")] == [10] * 3
    assert rt.timeout_for("screenshot_preview") == 60
    for name in ("generate_images", "remove_background", "edit_image", "extract_assets", "nope"):
        assert rt.timeout_for(name) == 120
    assert ToolsSettings().tool_timeouts_s == DEFAULT_TOOL_TIMEOUTS_S
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="positive"):
            ToolRuntime({}, timeouts_s={"probe": bad})
        with pytest.raises(ValueError, match="positive"):
            ToolRuntime({}, default_timeout_s=bad)


async def test_the_worker_passes_its_settings_on(tmp_path: Path) -> None:
    config = ToolsSettings(data_dir=tmp_path, screenshots_enabled=False, max_file_bytes=100)
    timeouts = {"create_file": 3.0}
    config = dataclasses.replace(config, tool_timeouts_s=timeouts, default_tool_timeout_s=7.0)
    worker = ToolWorker(config)
    assert worker.runtime.timeout_for("create_file") == 3.0
    assert worker.runtime.timeout_for("edit_file") == 7.0
    call = ToolCall("c", "create_file", {"content": "<p>" + "x" * 200 + "</p>"})
    outcome = await worker.execute(call, None, CTX)
    assert outcome.result["error"] == "File too large: 207 bytes; the limit is 100 bytes."


# -- the file tools: path rules, then size limits ------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["index.html", "about.htm", "INDEX.HTML", "pages/about.html", "my-page_2.html",
     "a..b.html", "a" * 250 + ".html", "site.css", "js/app.js"],
)  # fmt: skip
async def test_accepted_paths(path: str) -> None:
    outcome = await create_file({"path": path, "content": "<p>x</p>"}, None, CTX)
    assert outcome.updated_file == FileState(path, "<p>x</p>")


_ABSOLUTE = "absolute paths are not allowed"
_DOTDOT = ".. segments are not allowed"
_COLON = "drive letters, URLs and colons are not allowed"
_BACKSLASH = "backslashes are not allowed; separate folders with /"
_INVISIBLE = "it contains control or invisible characters"
_SUFFIX = "it must end in .html, .htm, .css or .js"
_SEGMENT = "empty or . segments are not allowed"
_NOT_ASCII = (
    "U+00E9 is not allowed: a path is ASCII letters, digits, '-', '_' and '.', in folders "
    "separated by / (so that no two paths look alike)"
)
_DEVICE = (
    "CON is a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9), whatever the extension"
)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/index.html", _ABSOLUTE), ("//server/share/x.html", _ABSOLUTE),
        ("../index.html", _DOTDOT), ("a/../../index.html", _DOTDOT),
        ("C:/site/index.html", _COLON), ("c:index.html", _COLON),
        ("file:///etc/x.html", _COLON), ("index.html:stream.html", _COLON),
        ("\\\\server\\share\\x.html", _BACKSLASH), ("a\\b.html", _BACKSLASH),
        ("index\x00.html", _INVISIBLE), ("a\nb.html", _INVISIBLE),
        ("in\u202edex.html", _INVISIBLE), ("index\u00a0.html", _INVISIBLE),
        ("a" * 251 + ".html", "it is longer than 255 characters"),
        ("index.php", _SUFFIX), ("index", _SUFFIX), (".html", _SUFFIX),
        # The rest of the rule (look-alikes, devices): tests/common/test_project_paths.py.
        ("caf\u00e9.html", _NOT_ASCII), ("CON.html", _DEVICE),
        ("pages/", _SEGMENT), ("a//b.html", _SEGMENT), ("./index.html", _SEGMENT),
        ("index?.html", 'the characters < > " | ? * are not allowed'),
        (["index.html"], "it must be a string"),
    ],
)  # fmt: skip
async def test_rejected_paths(path: Any, reason: str) -> None:
    outcome = await create_file({"path": path, "content": "<p>x</p>"}, FILE, CTX)
    assert (outcome.ok, outcome.updated_file) == (False, None)
    shown = json.dumps(path, ensure_ascii=True)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    assert outcome.result == {"error": f"{PATH_RULE}; got {shown} ({reason})"}
    assert outcome.summary == {"error": "Invalid path"}
    assert PATH_RULE == "create_file path must be a relative file name like index.html"


_PIECES = st.sampled_from(
    ["..", ".", "/", "\\", "C:", "a", "index", ".html", ".htm", "\x00", " ", "~", "%2e", "\u2028"]
)


@settings(max_examples=500, deadline=None)
@given(st.text() | st.lists(_PIECES, max_size=8).map("".join))
def test_no_accepted_path_escapes_or_is_absolute(path: str) -> None:
    if path_problem(path) is not None:
        return
    assert ".." not in path.replace("\\", "/").split("/")
    assert not path.startswith(("/", "\\"))
    assert not (len(path) >= 2 and path[1] == ":")
    assert ":" not in path
    assert len(path) <= 255
    assert path.lower().endswith((".html", ".htm", ".css", ".js"))
    assert all(ch.isprintable() or ch == " " for ch in path)


async def test_create_file_refuses_content_over_the_default_limit() -> None:
    body = "x" * (2 * MB + 1)
    outcome = await create_file({"content": body}, None, CTX)
    assert outcome.result == {
        "error": f"File too large: {2 * MB + 1} bytes; the limit is 2 MB.",
        "size_bytes": 2 * MB + 1,
        "limit_bytes": 2 * MB,
    }
    assert outcome.summary == {"error": "File too large"}
    assert (await create_file({"content": body[:-1]}, None, CTX)).ok is True


async def test_sizes_are_utf8_bytes_shown_in_round_units() -> None:
    outcome = await create_file({"content": "é" * 6}, None, CTX, max_file_bytes=10)
    assert outcome.result["error"] == "File too large: 12 bytes; the limit is 10 bytes."
    assert (await create_file({"content": "é" * 5}, None, CTX, max_file_bytes=10)).ok is True
    handlers = file_tool_handlers(max_file_bytes=512 * 1024)
    outcome = await handlers["create_file"]({"content": "x" * (600 * 1024)}, None, CTX)
    assert outcome.result["error"] == f"File too large: {600 * 1024} bytes; the limit is 512 KB."


@pytest.mark.parametrize(
    ("new_text", "ok"), [("ab", True), ("abc", False), ("é", True), ("éa", False)]
)
async def test_edit_file_result_is_held_to_the_limit(new_text: str, ok: bool) -> None:
    file = FileState("index.html", "0123456789")  # 10 bytes; "5" becomes new_text
    outcome = await edit_file({"old_text": "5", "new_text": new_text}, file, CTX, max_file_bytes=11)
    assert outcome.ok is ok
    if not ok:
        assert outcome.result["error"] == "File too large: 12 bytes; the limit is 11 bytes."
        assert outcome.updated_file is None


async def test_edit_file_checks_sizes_before_building_and_after() -> None:
    # A replace-all that would multiply the file is refused before the copy is built.
    many = FileState("index.html", "a" * 1000)
    args = {"old_text": "a", "new_text": "b" * MB, "count": -1}
    outcome = await edit_file(args, many, CTX)
    assert outcome.result["error"] == f"File too large: {1000 * MB} bytes; the limit is 2 MB."
    # A file already over the limit must come back under it.
    file = FileState("index.html", "<p>" + "x" * 20 + "</p>")  # 27 bytes
    shrink = await edit_file({"old_text": "xxxxx", "new_text": ""}, file, CTX, max_file_bytes=24)
    assert shrink.ok is True
    still = await edit_file({"old_text": "xx", "new_text": ""}, file, CTX, max_file_bytes=24)
    assert still.result["error"] == "File too large: 25 bytes; the limit is 24 bytes."
