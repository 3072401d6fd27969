"""Log lines: JSON for machines, a short text line for a terminal, keys redacted in both."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
from collections.abc import Iterator

import pytest

from services.common.logs import (
    REDACTED,
    JsonFormatter,
    TextFormatter,
    choose_format,
    setup_logging,
)

KEY = "sk-test-0123456789abcdef"
TOKEN = 'tok"en\\with-escapes'


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def record(msg: str, *args: object, exc: bool = False, **extra: object) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise RuntimeError(f"upstream said no to {KEY}")
        except RuntimeError:
            exc_info = sys.exc_info()
    made = logging.LogRecord("s2c.test", logging.WARNING, __file__, 1, msg, args, exc_info)
    made.__dict__.update(extra)
    return made


@pytest.fixture
def root_handlers() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_json_line_has_the_fields_and_no_key() -> None:
    line = JsonFormatter("agent", [KEY, TOKEN]).format(
        record("calling with %s", KEY, exc=True, generation_id="g1", auth=TOKEN)
    )
    entry = json.loads(line)
    assert entry["level"] == "warning"
    assert entry["service"] == "agent"
    assert entry["logger"] == "s2c.test"
    assert entry["msg"] == f"calling with {REDACTED}"
    assert entry["generation_id"] == "g1"
    # The token has characters JSON escapes: its escaped spelling is scrubbed too.
    assert entry["auth"] == REDACTED
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["ts"])
    assert "RuntimeError" in entry["exc"]
    assert KEY not in line
    assert "sk-test" not in line


def test_text_line_reads_as_time_level_service_message_ids() -> None:
    line = TextFormatter("gateway", [KEY]).format(
        record(
            "variant finished",
            generation_id="3f2a9c",
            variant_index=0,
            status="failed",
            error="bad key",
            tool_calls=[("call_1", "create_file", True)],
        )
    )
    assert re.fullmatch(
        r"\d\d:\d\d:\d\d\.\d{3} warn  gateway  variant finished generation_id=3f2a9c"
        r' variant_index=0 status=failed error="bad key"'
        r' tool_calls=\[\["call_1", "create_file", true\]\]',
        line,
    ), line


def test_text_line_redacts_message_values_and_traceback() -> None:
    line = TextFormatter("tools", [KEY, TOKEN]).format(
        record("key %s", KEY, exc=True, header=f"Bearer {KEY}", token=TOKEN, nested={"k": KEY})
    )
    assert KEY not in line
    assert "sk-test" not in line
    assert TOKEN not in line
    assert json.dumps(TOKEN)[1:-1] not in line
    assert re.match(rf"\d\d:\d\d:\d\d\.\d{{3}} warn  tools    key {re.escape(REDACTED)} ", line)
    assert f'header="Bearer {REDACTED}"' in line
    assert "Traceback" in line
    assert f"upstream said no to {REDACTED}" in line


def test_text_values_are_shortened_only_after_redaction() -> None:
    # The key straddles the cut: shortening first would leave its head unredacted.
    value = "x" * 150 + KEY + "y" * 50
    line = TextFormatter("agent", [KEY]).format(record("long", detail=value))
    shown = line.split("detail=", 1)[1]
    assert shown.endswith("…")
    assert len(shown) == 160
    assert "sk-test" not in line
    assert "0123" not in line


def test_short_strings_are_not_treated_as_secrets() -> None:
    line = TextFormatter("agent", ["", "abc"]).format(record("abc is fine", code="abc"))
    assert line.endswith("abc is fine code=abc")


def test_choose_format() -> None:
    assert choose_format("", Terminal()) == "text"
    assert choose_format("", io.StringIO()) == "json"
    assert choose_format("json", Terminal()) == "json"
    assert choose_format(" TEXT ", io.StringIO()) == "text"
    closed = io.StringIO()
    closed.close()
    assert choose_format("", closed) == "json"
    with pytest.raises(ValueError, match=r"S2C_LOG_FORMAT must be 'json' or 'text', got 'xml'"):
        choose_format("xml", Terminal())


@pytest.mark.parametrize(
    ("env", "terminal", "expect_json"),
    [({}, True, False), ({}, False, True), ({"S2C_LOG_FORMAT": "json"}, True, True)],
)
def test_setup_logging_picks_the_format(
    root_handlers: None, env: dict[str, str], terminal: bool, expect_json: bool
) -> None:
    stream = Terminal() if terminal else io.StringIO()
    setup_logging("agent", [KEY], "INFO", env=env, stream=stream)
    logging.getLogger("s2c.test").info("started with %s", KEY, extra={"port": 50051})
    line = stream.getvalue().strip()
    assert KEY not in line
    if expect_json:
        assert json.loads(line)["port"] == 50051
    else:
        assert line.endswith(f"info  agent    started with {REDACTED} port=50051")
