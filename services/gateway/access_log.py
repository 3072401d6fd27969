"""The gateway's access log: one record per request, with the access token never in it.

The token may arrive in the query string (`?token=…`, for WebSocket and UI URLs), and
aiohttp accepts it there in any percent-encoding, of the value or of the name
(`?tok%65n=%72%74…`), any number of times. The log formatter's redaction replaces the
token's literal text only, so every URL this log writes (the request target and the
Referer) has the value of each parameter whose name decodes to `token` replaced first,
whatever the value is.
"""

from __future__ import annotations

from urllib.parse import unquote_plus

from aiohttp.abc import AbstractAccessLogger
from aiohttp.web import BaseRequest, StreamResponse

from services.common.logs import REDACTED
from services.gateway.access import TOKEN_QUERY_PARAM

# A name encoded more often than this is not one aiohttp would decode to `token` anyway.
_MAX_DECODES = 4


def redact_url(url: str) -> str:
    """`url` with the value of every `token` query parameter replaced, by name, however
    the name is spelled (percent-encoded, `+` for space, upper case)."""
    base, question, rest = url.partition("?")
    if not question:
        return url
    query, hash_mark, fragment = rest.partition("#")
    pairs = []
    for pair in query.split("&"):
        name, equals, _ = pair.partition("=")
        if equals and _decoded_name(name) == TOKEN_QUERY_PARAM:
            pair = f"{name}={REDACTED}"
        pairs.append(pair)
    return f"{base}?{'&'.join(pairs)}{hash_mark}{fragment}"


def _decoded_name(name: str) -> str:
    for _ in range(_MAX_DECODES):
        decoded = unquote_plus(name)
        if decoded == name:
            break
        name = decoded
    return name.strip().lower()


class AccessLogger(AbstractAccessLogger):
    """`GET /path?query 200` with the client, size, time, Referer and User-Agent as
    fields; URLs redacted (`redact_url`)."""

    def log(self, request: BaseRequest, response: StreamResponse, time: float) -> None:
        target = redact_url(request.raw_path)
        referer = request.headers.get("Referer")
        self.logger.info(
            "%s %s %s",
            request.method,
            target,
            response.status,
            extra={
                "remote": request.remote or "",
                "method": request.method,
                "path": target,
                "status": response.status,
                "bytes": response.body_length,
                "duration_s": round(time, 6),
                "referer": redact_url(referer) if referer else "",
                "user_agent": request.headers.get("User-Agent", ""),
            },
        )
