"""A local fake of the Gemini Developer API's non-streaming `generateContent` endpoint.

It answers the real `GenerateContentResponse` JSON: the model's reply is the text of
`candidates[0].content.parts[0]`, which is what the SDK's `response.text` and
`response.parsed` read. Replies are chosen per call by looking at the request ids
(`asset-0001`, …) named in the prompt, so concurrent calls can be answered correctly
whatever order they arrive in.

    fake = FakeGeminiDetect()
    base_url = await fake.start()          # HttpOptions(base_url=..., api_version="v1alpha")
    fake.detections["asset-0001"] = detection(1, [0, 0, 500, 500], "logo")
    fake.add_http_error(429)               # the next call gets a Google error JSON
    fake.responder = lambda call: Reply(text="not json")   # full control per call
    fake.require_concurrent(3)             # each reply waits until 3 calls are in flight
    fake.hang = True                       # calls get no answer until stop()
    ...
    fake.requests[0].body                  # the JSON body of the first call
    await fake.stop()

Without a responder, a call is answered with `{"detections": [...]}` holding the scripted
detection of each of its request ids that has one, in the prompt's order (or reversed,
with `reverse_order`, to exercise mapping back to request order).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes import serve_on_loopback

ERROR_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_REQUEST_ID = re.compile(r"asset-\d{4,}")
# Long enough for any honest client to get its calls in; short enough to fail a test fast.
_CONCURRENCY_WAIT_S = 10.0


@dataclass(frozen=True, slots=True)
class HttpError:
    code: int
    message: str
    status: str


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful answer: `text` verbatim as the model's output."""

    text: str
    prompt_tokens: int = 1200
    candidate_tokens: int = 60


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    path: str
    version: str
    model: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def parts(self) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = self.body["contents"][0]["parts"]
        return parts

    @property
    def prompt(self) -> str:
        text: str = self.parts[-1]["text"]
        return text

    @property
    def request_ids(self) -> list[str]:
        return list(dict.fromkeys(_REQUEST_ID.findall(self.prompt)))


def detection(
    image_index: Any, box_2d: Any, label: Any = None, *, request_id: str | None = None
) -> dict[str, Any]:
    """One detection as the model writes it; `request_id` is filled in when answered."""
    out: dict[str, Any] = {"image_index": image_index, "box_2d": box_2d, "label": label}
    if request_id is not None:
        out["request_id"] = request_id
    return out


def detections_json(items: list[dict[str, Any]]) -> str:
    # allow_nan: a model can emit NaN, and the client must cope with it.
    return json.dumps({"detections": items}, allow_nan=True)


@dataclass
class FakeGeminiDetect:
    detections: dict[str, dict[str, Any]] = field(default_factory=dict)
    reverse_order: bool = False
    responder: Callable[[RecordedRequest], Reply | HttpError] | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    hang: bool = False
    base_url: str = ""
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _errors: list[HttpError] = field(default_factory=list)
    _runner: web.AppRunner | None = None
    _concurrency: int = 0
    _arrived: int = 0
    _all_arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> str:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/{version}/models/{action}", self._generate)
        self._runner, self.base_url = await serve_on_loopback(app)
        return self.base_url

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def add_http_error(self, code: int, message: str | None = None) -> None:
        """The next call (in arrival order) is answered with this Google error."""
        status = ERROR_STATUSES.get(code, "UNKNOWN")
        self._errors.append(HttpError(code, message or f"fake {status}", status))

    def require_concurrent(self, calls: int) -> None:
        """Hold every reply until `calls` calls have arrived; a 500 if they never do."""
        self._concurrency = calls

    async def _generate(self, request: web.Request) -> web.Response:
        model, _, method = request.match_info["action"].partition(":")
        version = request.match_info["version"]
        if version not in ("v1", "v1beta", "v1alpha") or method != "generateContent":
            return _error_response(HttpError(404, f"fake: no route {request.path}", "NOT_FOUND"))
        body = await request.json()
        recorded = RecordedRequest(request.path, version, model, dict(request.headers), body)
        self.requests.append(recorded)
        if self.hang:
            await self._stopping.wait()
            return _error_response(HttpError(503, "fake: stopped", "UNAVAILABLE"))
        if self._concurrency:
            self._arrived += 1
            if self._arrived >= self._concurrency:
                self._all_arrived.set()
            try:
                await asyncio.wait_for(self._all_arrived.wait(), _CONCURRENCY_WAIT_S)
            except TimeoutError:
                return _error_response(
                    HttpError(500, "fake: calls were not concurrent", "INTERNAL")
                )
        if self._errors:
            return _error_response(self._errors.pop(0))
        reply = self.responder(recorded) if self.responder else self._scripted(recorded)
        if isinstance(reply, HttpError):
            return _error_response(reply)
        return web.json_response(_response_json(reply, model, len(self.requests)))

    def _scripted(self, call: RecordedRequest) -> Reply:
        ids = call.request_ids
        if self.reverse_order:
            ids.reverse()
        items = [
            {"request_id": request_id, **self.detections[request_id]}
            for request_id in ids
            if request_id in self.detections
        ]
        return Reply(detections_json(items))


def _error_response(error: HttpError) -> web.Response:
    body = {"error": {"code": error.code, "message": error.message, "status": error.status}}
    return web.json_response(body, status=error.code)


def _response_json(reply: Reply, model: str, number: int) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"parts": [{"text": reply.text}], "role": "model"},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": reply.prompt_tokens,
            "candidatesTokenCount": reply.candidate_tokens,
            "totalTokenCount": reply.prompt_tokens + reply.candidate_tokens,
            "promptTokensDetails": [
                {"modality": "IMAGE", "tokenCount": reply.prompt_tokens - 200},
                {"modality": "TEXT", "tokenCount": 200},
            ],
        },
        "modelVersion": model,
        "responseId": f"detect-{number}",
    }
