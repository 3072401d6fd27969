"""A local fake of the Gemini Developer API streaming endpoint.

Replies follow docs/provider-wire-formats.md (Gemini): `data: <json>` records
with a space after the colon and no `event:` lines (the SDK rejects both
deviations), one scripted part per chunk, each chunk written on its own (`delivery`
changes that as in the Anthropic fake: "burst" or "bytes").

    fake = FakeGemini()
    base_url = await fake.start()      # pass as HttpOptions(base_url=...)
    fake.add_turn(
        Thought("Planning…"),
        Say("I'll create index.html."),
        Call("create_file", {"path": "index.html"}, id="call-1", signature=b"sig"),
        usage=TurnUsage(prompt=40, candidates=30, thoughts=12),
    )
    fake.add_http_error(429)           # the next request gets a 429
    url = fake.add_asset("/img.png", png_bytes, "image/png")   # served by GET
    ...
    fake.requests[0].body              # the JSON body of the first request
    await fake.wait_disconnect()       # after cancelling a client mid-stream
    await fake.stop()

`FakeGemini(emulate_cache=True)` reports prompt and cached tokens as implicit caching
would (`prompt_cache.PrefixCache` over the whole prompt, one cache per model, 1024
tokens at least; `implicit_minimum` changes it) in place of the scripted ones.

The endpoint is `POST /{v1|v1beta}/models/{model}:streamGenerateContent?alt=sse`.
Replies are consumed one per request, in order; a request with nothing left
gets an HTTP 500, so a test scripting too few turns fails loudly.
"""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass, field, replace
from typing import Any

from aiohttp import web

from tests.fakes import serve_on_loopback
from tests.fakes.anthropic_server import Delivery, writes
from tests.fakes.prompt_cache import PrefixCache, gemini_text

# The `status` the real API sends with each HTTP code.
ERROR_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


@dataclass(frozen=True, slots=True)
class Thought:
    text: str
    signature: bytes | None = None


@dataclass(frozen=True, slots=True)
class Say:
    text: str
    signature: bytes | None = None


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    args: dict[str, Any]
    id: str | None = None  # the Developer API often leaves it out
    signature: bytes | None = None


Part = Thought | Say | Call


@dataclass(frozen=True, slots=True)
class TurnUsage:
    prompt: int = 40
    candidates: int = 30
    thoughts: int = 0
    cached: int = 0

    @property
    def total(self) -> int:
        return self.prompt + self.candidates + self.thoughts


@dataclass(frozen=True, slots=True)
class HttpError:
    code: int
    message: str
    status: str


@dataclass(frozen=True, slots=True)
class Turn:
    parts: tuple[Part, ...]
    usage: TurnUsage = field(default_factory=TurnUsage)
    error: HttpError | None = None  # sent as a `data: {"error": …}` record after the parts
    hang: bool = False  # after the parts, hold the stream open until the client leaves
    drop: bool = False  # after the parts, cut the connection without ending the stream
    delivery: Delivery = "records"
    cut: bool = False  # end the body cleanly in the middle of the last record
    # Ends the turn with finishReason CONTINUATION and this continuationToken: the
    # client must send the request again with it (the next reply goes on from there).
    continuation: bytes | None = None


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    path: str
    model: str
    headers: dict[str, str]
    body: dict[str, Any]
    peer: str = ""  # the client's address: the same one means a reused connection


Reply = Turn | HttpError


class FakeGemini:
    """See the module docstring."""

    def __init__(self, *, emulate_cache: bool = False, implicit_minimum: int = 1024) -> None:
        self.requests: list[RecordedRequest] = []
        self.asset_requests: list[str] = []
        self._cache = PrefixCache(minimum=implicit_minimum) if emulate_cache else None
        self._replies: list[Reply] = []
        self._assets: dict[str, tuple[bytes, str]] = {}
        self._runner: web.AppRunner | None = None
        self.base_url = ""  # set by start()
        self._disconnected = asyncio.Event()
        self._stopping = asyncio.Event()

    async def start(self) -> str:
        # As the real API: inline video and images make large requests (aiohttp's default is 1 MiB).
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/{version}/models/{action}", self._generate)
        app.router.add_get("/assets/{name}", self._asset)
        # Cancelling the handler when the client goes away is how we see disconnects.
        self._runner, self.base_url = await serve_on_loopback(app, handler_cancellation=True)
        return self.base_url

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def add_turn(
        self,
        *parts: Part,
        usage: TurnUsage | None = None,
        error: HttpError | None = None,
        hang: bool = False,
        drop: bool = False,
        delivery: Delivery = "records",
        cut: bool = False,
        continuation: bytes | None = None,
    ) -> None:
        self._replies.append(
            Turn(parts, usage or TurnUsage(), error, hang, drop, delivery, cut, continuation)
        )

    def add_http_error(self, code: int, message: str | None = None) -> None:
        self._replies.append(http_error(code, message))

    def add_asset(self, name: str, data: bytes, content_type: str) -> str:
        """Serves `data` at the returned URL (call after `start`)."""
        self._assets[name] = (data, content_type)
        return f"{self.base_url}/assets/{name}"

    async def wait_disconnect(self) -> None:
        """Returns once a client has gone away in the middle of a streamed reply."""
        await self._disconnected.wait()

    async def _asset(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.asset_requests.append(name)
        if name not in self._assets:
            return web.Response(status=404)
        data, content_type = self._assets[name]
        return web.Response(body=data, content_type=content_type)

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        model, _, method = request.match_info["action"].partition(":")
        if request.match_info["version"] not in ("v1", "v1beta") or method != (
            "streamGenerateContent"
        ):
            return _error_response(http_error(404, f"fake: no route {request.path}"))
        body = await request.json()
        peer = str(request.transport.get_extra_info("peername")) if request.transport else ""
        self.requests.append(
            RecordedRequest(request.path, model, dict(request.headers), body, peer)
        )
        if not self._replies:
            return _error_response(http_error(500, "fake: no scripted reply left"))
        reply = self._replies.pop(0)
        if isinstance(reply, HttpError):
            return _error_response(reply)
        if self._cache is not None:
            hit = self._cache.lookup(model, gemini_text(body))
            reply = replace(reply, usage=replace(reply.usage, prompt=hit.total, cached=hit.cached))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            records = [
                f"data: {json.dumps(record)}\r\n\r\n".encode()
                for record in _turn_records(reply, model, len(self.requests))
            ]
            if reply.cut:
                records[-1] = records[-1][: len(records[-1]) // 2]
            for piece in writes(records, reply.delivery):
                await response.write(piece)
            if reply.hang:
                await self._stopping.wait()
            if reply.drop and request.transport is not None:
                request.transport.abort()
                return response
        except (asyncio.CancelledError, ConnectionResetError):
            self._disconnected.set()
            raise
        await response.write_eof()
        return response


def http_error(code: int, message: str | None = None) -> HttpError:
    status = ERROR_STATUSES.get(code, "UNKNOWN")
    return HttpError(code, message or f"fake {status}", status)


def _error_body(error: HttpError) -> dict[str, Any]:
    return {"error": {"code": error.code, "message": error.message, "status": error.status}}


def _error_response(error: HttpError) -> web.Response:
    return web.json_response(_error_body(error), status=error.code)


def _part_json(part: Part) -> dict[str, Any]:
    out: dict[str, Any]
    if isinstance(part, Thought):
        out = {"text": part.text, "thought": True}
    elif isinstance(part, Say):
        out = {"text": part.text}
    else:
        call: dict[str, Any] = {"name": part.name, "args": part.args}
        if part.id is not None:
            call["id"] = part.id
        out = {"functionCall": call}
    if part.signature is not None:
        # Standard base64, as the API sends it (the SDK echoes it URL-safe).
        out["thoughtSignature"] = base64.b64encode(part.signature).decode("ascii")
    return out


def _turn_records(turn: Turn, model: str, number: int) -> list[dict[str, Any]]:
    usage = turn.usage
    partial_usage = {"promptTokenCount": usage.prompt, "totalTokenCount": usage.prompt}
    final_usage: dict[str, Any] = {
        "promptTokenCount": usage.prompt,
        "candidatesTokenCount": usage.candidates,
        "thoughtsTokenCount": usage.thoughts,
        "totalTokenCount": usage.total,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": usage.prompt}],
    }
    if usage.cached:
        final_usage["cachedContentTokenCount"] = usage.cached
    records: list[dict[str, Any]] = []
    for index, part in enumerate(turn.parts):
        last = index == len(turn.parts) - 1 and turn.error is None
        candidate: dict[str, Any] = {
            "content": {"parts": [_part_json(part)], "role": "model"},
            "index": 0,
        }
        if last:
            candidate["finishReason"] = "STOP"
            if turn.continuation is not None:
                candidate["finishReason"] = "CONTINUATION"
                candidate["continuationToken"] = base64.b64encode(turn.continuation).decode()
        records.append(
            {
                "candidates": [candidate],
                "modelVersion": model,
                "responseId": f"resp-{number}",
                "usageMetadata": final_usage if last else partial_usage,
            }
        )
    if turn.error is not None:
        records.append(_error_body(turn.error))
    return records
