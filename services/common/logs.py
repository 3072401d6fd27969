"""Logging set-up shared by every process: one line per record, keys redacted."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterable

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message"}


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._service = service
        self._secrets = [s for s in secrets if len(s) >= 4]

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "service": self._service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        line = json.dumps(entry, default=str, ensure_ascii=False)
        for secret in self._secrets:
            line = line.replace(secret, "[REDACTED]")
        return line


def setup_logging(service: str, secrets: Iterable[str] = (), level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service, secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
