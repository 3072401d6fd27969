"""Logging set-up shared by every process: one line per record, keys redacted.

Two renderings of the same record: JSON (the default, for log collectors and tests that
parse lines) and a short text line for a person watching `s2c up` in a terminal.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Literal, TextIO

LogFormat = Literal["json", "text"]

FORMAT_ENV = "S2C_LOG_FORMAT"
REDACTED = "[REDACTED]"

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message"}
# A text line stays one screen line wide for the common records; the JSON line keeps all.
_MAX_TEXT_VALUE = 160
_LEVELS = {"WARNING": "warn", "CRITICAL": "crit"}
# A bare value with one of these would be misread as a new key or a second line.
_NEEDS_QUOTES = frozenset(' ="\n\r\t')


class _Redactor:
    def __init__(self, secrets: Iterable[str]) -> None:
        # Shorter strings would match ordinary text; a key is never that short.
        kept = {s for s in secrets if len(s) >= 4}
        # A secret inside a JSON string is escaped ("\\", "\""): scrub that spelling too.
        forms = kept | {json.dumps(s, ensure_ascii=False)[1:-1] for s in kept}
        # Longest first, so a secret that contains another is replaced whole.
        self._forms = sorted(forms, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for form in self._forms:
            text = text.replace(form, REDACTED)
        return text


def _extras(record: logging.LogRecord) -> dict[str, object]:
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD}


class _ServiceFormatter(logging.Formatter):
    # Both formats name the service and pass their whole output through the redactor.
    def __init__(self, service: str, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._service = service
        self._redact = _Redactor(secrets)


class JsonFormatter(_ServiceFormatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "service": self._service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update(_extras(record))
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return self._redact(json.dumps(entry, default=str, ensure_ascii=False))


class TextFormatter(_ServiceFormatter):
    """`12:03:04.512 info  agent    generation started generation_id=3f2a… status=ok`."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        level = _LEVELS.get(record.levelname, record.levelname.lower())
        parts = [
            f"{stamp}.{int(record.msecs):03d}",
            f"{level:<5}",
            f"{self._service:<8}",
            record.getMessage(),
        ]
        parts += [f"{key}={self._value(value)}" for key, value in _extras(record).items()]
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return self._redact(line)

    def _value(self, value: object) -> str:
        if isinstance(value, str) and value and not any(c in value for c in _NEEDS_QUOTES):
            text = value
        else:
            text = json.dumps(value, default=str, ensure_ascii=False)
        # Redacted before it is shortened: a cut could leave part of a key unmatched.
        text = self._redact(text)
        if len(text) > _MAX_TEXT_VALUE:
            text = text[: _MAX_TEXT_VALUE - 1] + "…"
        return text


def choose_format(requested: str, stream: TextIO) -> LogFormat:
    """`S2C_LOG_FORMAT` wins; unset, a terminal gets text and anything else JSON."""
    value = requested.strip().lower()
    if value == "json":
        return "json"
    if value == "text":
        return "text"
    if value:
        raise ValueError(f"{FORMAT_ENV} must be 'json' or 'text', got {requested!r}")
    try:
        return "text" if stream.isatty() else "json"
    except ValueError:  # a closed stream
        return "json"


def setup_logging(
    service: str,
    secrets: Iterable[str] = (),
    level: str = "INFO",
    env: Mapping[str, str] | None = None,
    stream: TextIO | None = None,
) -> None:
    # Read here, not from a settings object: logging is configured the same way for all
    # three services and for tools that have no settings.
    env = os.environ if env is None else env
    stream = sys.stderr if stream is None else stream
    fmt = choose_format(env.get(FORMAT_ENV, ""), stream)
    formatter_type = TextFormatter if fmt == "text" else JsonFormatter
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter_type(service, secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
