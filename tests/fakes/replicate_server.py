"""A local fake of the Replicate HTTP API, speaking the wire format the `replicate` SDK reads.

See docs/provider-wire-formats.md (Replicate). Routes:

* `POST /v1/models/{owner}/{name}/predictions` `{"input": …}` — a model by name;
* `POST /v1/predictions` `{"version": …, "input": …}` — a pinned version (422 without one);
* `GET /v1/predictions/{id}` — polling: `starting` → `processing` → a terminal status;
* `POST /v1/predictions/{id}/cancel`;
* `GET /files/{id}.png` — the result images (a small PNG, `FakeReplicate.png`).

Every `/v1` request must carry `Authorization: Bearer …` (and, when `token` is set, that
token); errors are problem+json bodies `{"title", "detail", "status"}` as the real API sends.

    async with FakeReplicate() as fake:       # or: base_url = await fake.start(); fake.stop()
        client = ReplicateClient("r8_test", fake.base_url, settings)
        fake.script("a red fox", Succeed(polls=2))      # keyed by input prompt, image or images[0]
        fake.script("a blue fox", Fail("NSFW content detected"))
        fake.script("slow", Hang())                     # never finishes (until cancelled)
        fake.script("bad", HttpFailure(422, "Invalid input"))
        fake.default = Succeed(shape="list")            # for every unscripted input
        fake.hold()                                     # new predictions stay "processing" …
        await fake.wait_for(lambda f: f.in_flight == 20)  # … while the test looks …
        fake.release()                                  # … until released
        fake.creations[0].json, fake.creations[0].authorization, fake.max_in_flight

`wait_for` re-checks its predicate after every request the fake handles, so tests wait on
what the client does, never on the clock.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from tests.fakes import serve_on_loopback

OutputShape = Literal["str", "list", "dict", "list_dict"]
_AUTO: Any = object()


def _tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)  # 1×1 RGBA
    pixels = zlib.compress(b"\x00\x10\x20\x30\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


@dataclass(frozen=True, slots=True)
class Succeed:
    """Succeeds after `polls` GETs (0: already succeeded in the create response)."""

    polls: int = 1
    shape: OutputShape = "str"
    output: Any = _AUTO  # anything but _AUTO is sent as the output verbatim


@dataclass(frozen=True, slots=True)
class Fail:
    """Ends as `failed`, with `error` (None: no error message)."""

    error: str | None = "Prediction failed"
    polls: int = 1


@dataclass(frozen=True, slots=True)
class Hang:
    """Stays `processing` for ever; only a cancel ends it."""


@dataclass(frozen=True, slots=True)
class HttpFailure:
    """The create request itself is refused with this status."""

    status: int
    detail: str = "fake: refused"


Outcome = Succeed | Fail | Hang | HttpFailure


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    json: Any

    @property
    def authorization(self) -> str | None:
        return self.headers.get("Authorization")


@dataclass(slots=True)
class FakePrediction:
    id: str
    model: str
    version: str
    input: dict[str, Any]
    outcome: Outcome
    polls: int = 0
    status: str = "starting"
    held: bool = False
    output: Any = None
    error: str | None = None

    @property
    def terminal(self) -> bool:
        return self.status in ("succeeded", "failed", "canceled")


@dataclass
class FakeReplicate:
    """See the module docstring."""

    token: str | None = None  # when set, any other bearer token gets a 401
    default: Outcome = field(default_factory=Succeed)
    base_url: str = ""
    png: bytes = field(default_factory=_tiny_png)
    requests: list[RecordedRequest] = field(default_factory=list)
    creations: list[RecordedRequest] = field(default_factory=list)
    cancels: list[str] = field(default_factory=list)
    files_served: list[str] = field(default_factory=list)
    predictions: dict[str, FakePrediction] = field(default_factory=dict)
    max_in_flight: int = 0
    _scripts: dict[str, Outcome] = field(default_factory=dict)
    _holding: bool = False
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _runner: web.AppRunner | None = None

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/models/{owner}/{name}/predictions", self._create_by_model)
        app.router.add_post("/v1/predictions", self._create_by_version)
        app.router.add_get("/v1/predictions/{id}", self._get)
        app.router.add_post("/v1/predictions/{id}/cancel", self._cancel)
        app.router.add_get("/files/{name}", self._file)
        self._runner, self.base_url = await serve_on_loopback(app)
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeReplicate:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- scripting and observing -----------------------------------------------------------

    def script(self, key: str, outcome: Outcome) -> None:
        """Use `outcome` for every prediction whose prompt, image or first image is `key`."""
        self._scripts[key] = outcome

    def hold(self) -> None:
        self._holding = True

    def release(self) -> None:
        self._holding = False
        for prediction in self.predictions.values():
            prediction.held = False

    @property
    def in_flight(self) -> int:
        """Predictions created and not yet seen to finish by the client."""
        return sum(1 for p in self.predictions.values() if not p.terminal)

    def file_url(self, prediction_id: str) -> str:
        return f"{self.base_url}/files/{prediction_id}.png"

    async def wait_for(self, predicate: Callable[[FakeReplicate], bool]) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: predicate(self))

    # -- handlers --------------------------------------------------------------------------

    async def _record(self, request: web.Request) -> RecordedRequest:
        body = await request.json() if request.can_read_body else None
        recorded = RecordedRequest(request.method, request.path, dict(request.headers), body)
        self.requests.append(recorded)
        return recorded

    async def _notify(self) -> None:
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        async with self._changed:
            self._changed.notify_all()

    def _unauthorized(self, recorded: RecordedRequest) -> web.Response | None:
        auth = recorded.authorization or ""
        if not auth.startswith("Bearer ") or (
            self.token is not None and auth != f"Bearer {self.token}"
        ):
            return _problem(401, "Unauthenticated", "You did not pass a valid authentication token")
        return None

    async def _create_by_model(self, request: web.Request) -> web.Response:
        model = f"{request.match_info['owner']}/{request.match_info['name']}"
        return await self._create(request, model=model, by_version=False)

    async def _create_by_version(self, request: web.Request) -> web.Response:
        return await self._create(request, model="fake/pinned-version", by_version=True)

    async def _create(self, request: web.Request, *, model: str, by_version: bool) -> web.Response:
        recorded = await self._record(request)
        try:
            refused = self._unauthorized(recorded)
            if refused is not None:
                return refused
            body = recorded.json if isinstance(recorded.json, dict) else {}
            version = body.get("version")
            if by_version and not isinstance(version, str):
                return _problem(422, "Invalid version", "version is required")
            inputs = body.get("input")
            if not isinstance(inputs, dict):
                return _problem(422, "Invalid input", "input is required")
            self.creations.append(recorded)
            outcome = self._scripts.get(_key(inputs), self.default)
            if isinstance(outcome, HttpFailure):
                return _problem(outcome.status, "Request failed", outcome.detail)
            prediction = FakePrediction(
                id=f"pred{next(self._ids):04d}",
                model=model,
                version=version if isinstance(version, str) else "fake-model-version",
                input=inputs,
                outcome=outcome,
                held=self._holding,
            )
            self.predictions[prediction.id] = prediction
            self._advance(prediction)
            return web.json_response(self._json(prediction), status=201)
        finally:
            await self._notify()

    async def _get(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        try:
            refused = self._unauthorized(recorded)
            if refused is not None:
                return refused
            prediction = self.predictions.get(request.match_info["id"])
            if prediction is None:
                return _problem(404, "Not found", "The requested resource could not be found")
            prediction.polls += 1
            self._advance(prediction)
            return web.json_response(self._json(prediction))
        finally:
            await self._notify()

    async def _cancel(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        try:
            refused = self._unauthorized(recorded)
            if refused is not None:
                return refused
            prediction = self.predictions.get(request.match_info["id"])
            if prediction is None:
                return _problem(404, "Not found", "The requested resource could not be found")
            self.cancels.append(prediction.id)
            if not prediction.terminal:
                prediction.status = "canceled"
            return web.json_response(self._json(prediction))
        finally:
            await self._notify()

    async def _file(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.files_served.append(name)
        if name.removesuffix(".png") not in self.predictions:
            return web.Response(status=404)
        return web.Response(body=self.png, content_type="image/png")

    # -- state -----------------------------------------------------------------------------

    def _advance(self, prediction: FakePrediction) -> None:
        outcome = prediction.outcome
        if prediction.terminal or isinstance(outcome, HttpFailure):
            return
        if isinstance(outcome, Hang) or prediction.held:
            prediction.status = "processing" if prediction.polls else "starting"
            return
        if prediction.polls < outcome.polls:
            prediction.status = "processing" if prediction.polls else "starting"
            return
        if isinstance(outcome, Fail):
            prediction.status, prediction.error = "failed", outcome.error
            return
        prediction.status = "succeeded"
        prediction.output = self._output(prediction.id, outcome)

    def _output(self, prediction_id: str, outcome: Succeed) -> Any:
        if outcome.output is not _AUTO:
            return outcome.output
        url = self.file_url(prediction_id)
        return {
            "str": url,
            "list": [url],
            "dict": {"url": url},
            "list_dict": [{"url": url}],
        }[outcome.shape]

    def _json(self, p: FakePrediction) -> dict[str, Any]:
        return {
            "id": p.id,
            "model": p.model,
            "version": p.version,
            "status": p.status,
            "input": p.input,
            "output": p.output,
            "error": p.error,
            "logs": "",
            "metrics": {"predict_time": 0.1} if p.status == "succeeded" else {},
            "created_at": "2026-01-01T00:00:00.000Z",
            "urls": {
                "get": f"{self.base_url}/v1/predictions/{p.id}",
                "cancel": f"{self.base_url}/v1/predictions/{p.id}/cancel",
            },
        }


def _key(inputs: dict[str, Any]) -> str:
    for name in ("prompt", "image"):
        value = inputs.get(name)
        if isinstance(value, str):
            return value
    images = inputs.get("images")
    if isinstance(images, list) and images and isinstance(images[0], str):
        return images[0]
    return ""


def _problem(status: int, title: str, detail: str) -> web.Response:
    return web.json_response(
        {"title": title, "detail": detail, "status": status},
        status=status,
        content_type="application/problem+json",
    )
