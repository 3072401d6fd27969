"""A fake OpenAI HTTP server, for running the real `openai` SDK in tests.

It serves `POST /v1/responses` and `POST /v1/chat/completions` on 127.0.0.1 from
per-route queues of scripted replies, in the exact SSE shape the real API uses (it
passes the SDK's `_strict_response_validation=True`), and records every request.

    fake = FakeOpenAI()
    base_url = await fake.start()                 # "http://127.0.0.1:<port>/v1"
    fake.add_response(responses_turn([Reasoning([["Plan", "ning"]]), Text(["Hi"])]))
    fake.add_chat(chat_turn([FunctionCall("call_1", "create_file", '{"path":"a"}')]))
    fake.add_response(http_error(429))
    ...                                           # drive an AsyncOpenAI at base_url
    fake.requests[0].json["input"]                # what the client sent
    await fake.stop()

A `Pause()` item makes the reply stop after the frames before it and wait until the
client disconnects (then `client_disconnected` is set) or `release()` is called (then
the rest is sent). `stream_paused` is set when a reply reaches its pause. Tests use
this to prove that cancelling a turn closes the upstream stream.

Other layouts of the same wire format: `FakeOpenAI(root="/api/v1", bearer=KEY)` is
OpenRouter's (its paths under `/api/v1`; a missing or wrong `Authorization: Bearer` key
answered 401 with OpenRouter's error body), `FakeOpenAI(azure_key=KEY,
deployments={"dep"})` Azure OpenAI's (`POST /openai/deployments/<deployment>/chat/completions`
with an `api-key` header and an `api-version` query parameter, each checked, the
failures answered with Azure's status and error body; `base_url` is then the origin).

`FakeOpenAI(emulate_cache=True)` reports input and cached tokens as OpenAI's prompt
cache would (`prompt_cache.openai_lookup`); output tokens stay scripted.

Clients must bypass any HTTP proxy for 127.0.0.1 (set NO_PROXY) and should use
`max_retries=0`, since the SDK retries 429 and 5xx.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web
from multidict import CIMultiDict

from tests.fakes import serve_on_loopback
from tests.fakes.prompt_cache import PrefixCache, openai_lookup, openai_usage_frame

RESPONSES_PATH = "/v1/responses"
CHAT_PATH = "/v1/chat/completions"
_PATHS = (RESPONSES_PATH, CHAT_PATH)
CREATED_AT = 1_700_000_000


# ---- scripted content ---------------------------------------------------------------


@dataclass(frozen=True)
class Reasoning:
    """A reasoning item whose summary `parts` each stream as the given chunks.

    `deltas=False` sends each part whole in `reasoning_summary_part.added` and `.done`
    with no text deltas, as some servers do. In chat replies the text goes in the
    non-standard delta field `chat_field` and `encrypted` is unused.
    """

    parts: Sequence[Sequence[str]]
    encrypted: str | None = None  # default: "enc-<response id>-<output index>"
    deltas: bool = True
    chat_field: str = "reasoning_content"


@dataclass(frozen=True)
class Text:
    """Assistant text streamed as `chunks`."""

    chunks: Sequence[str]


@dataclass(frozen=True)
class FunctionCall:
    """A function call whose `arguments` text streams in `pieces` nearly equal chunks."""

    call_id: str
    name: str
    arguments: str
    pieces: int = 3


@dataclass(frozen=True)
class Pause:
    """Stop sending here until the client disconnects or `FakeOpenAI.release()`."""


Item = Reasoning | Text | FunctionCall | Pause


@dataclass(frozen=True)
class TokenUsage:
    """Usage as the API reports it: `input` includes the `cached` tokens."""

    input: int = 50
    output: int = 40
    cached: int = 0
    reasoning: int = 0


def split(text: str, pieces: int) -> list[str]:
    """`text` cut into `pieces` nearly equal, non-empty chunks (fewer if it is short)."""
    pieces = max(1, min(pieces, len(text)))
    size, extra = divmod(len(text), pieces)
    out, start = [], 0
    for i in range(pieces):
        end = start + size + (1 if i < extra else 0)
        out.append(text[start:end])
        start = end
    return out or [""]


# ---- replies --------------------------------------------------------------------------


@dataclass(frozen=True)
class SseReply:
    """An event stream: `frames` are complete SSE records; `pause_at` is a frame index."""

    frames: tuple[str, ...]
    pause_at: int | None = None


@dataclass(frozen=True)
class ErrorReply:
    status: int
    body: dict[str, Any]


Reply = SseReply | ErrorReply

_ERROR_DEFAULTS: dict[int, tuple[str, str, str | None]] = {
    400: ("Invalid request.", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to use this model.", "invalid_request_error", None),
    404: (
        "The model does not exist or you do not have access to it.",
        "invalid_request_error",
        "model_not_found",
    ),
    429: ("Rate limit reached. Please try again later.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request.", "server_error", None),
}


def http_error(
    status: int, message: str | None = None, *, type: str | None = None, code: str | None = None
) -> ErrorReply:
    """An HTTP error with the real body shape `{"error": {message, type, param, code}}`."""
    d_message, d_type, d_code = _ERROR_DEFAULTS.get(status, ("Error.", "server_error", None))
    error = {
        "message": message if message is not None else d_message,
        "type": type or d_type,
        "param": None,
        "code": code if code is not None else d_code,
    }
    return ErrorReply(status, {"error": error})


def _sse(data: Mapping[str, Any], event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n"


# ---- Responses API streams ------------------------------------------------------------

ResponsesEnd = Literal["completed", "failed", "incomplete", "error", "none"]


class _ResponsesWriter:
    def __init__(self, response_id: str, model: str) -> None:
        self.rid = response_id
        self.model = model
        self.frames: list[str] = []
        self.output: list[dict[str, Any]] = []
        self.pause_at: int | None = None
        self.tag = response_id.removeprefix("resp_")

    def send(self, type_: str, **fields: Any) -> None:
        data = {"type": type_, **fields, "sequence_number": len(self.frames)}
        self.frames.append(_sse(data, type_))

    def response(self, status: str, **extra: Any) -> dict[str, Any]:
        done = status != "in_progress"
        return {
            "id": self.rid,
            "object": "response",
            "created_at": CREATED_AT,
            "status": status,
            "model": self.model,
            "output": list(self.output) if done else [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": None,
            **extra,
        }

    def item(
        self,
        index: int,
        added: dict[str, Any],
        done: dict[str, Any],
        chunks: list[list[str]],
        deltas: bool = True,
    ) -> None:
        self.send("response.output_item.added", output_index=index, item=added)
        ids = {"item_id": added["id"], "output_index": index}
        if added["type"] == "reasoning":
            for s_index, part_chunks in enumerate(chunks):
                self._summary_part({**ids, "summary_index": s_index}, part_chunks, deltas)
        elif added["type"] == "message":
            part = done["content"][0]
            c_ids = {**ids, "content_index": 0}
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            self.send("response.content_part.added", **c_ids, part=empty)
            for chunk in chunks[0]:
                self.send("response.output_text.delta", **c_ids, delta=chunk, logprobs=[])
            self.send("response.output_text.done", **c_ids, text=part["text"], logprobs=[])
            self.send("response.content_part.done", **c_ids, part=part)
        else:
            for chunk in chunks[0]:
                self.send("response.function_call_arguments.delta", **ids, delta=chunk)
            args = done["arguments"]
            self.send("response.function_call_arguments.done", **ids, arguments=args)
        self.send("response.output_item.done", output_index=index, item=done)
        self.output.append(done)

    def _summary_part(self, ids: dict[str, Any], chunks: list[str], deltas: bool) -> None:
        text = "".join(chunks)
        first = {"type": "summary_text", "text": "" if deltas else text}
        self.send("response.reasoning_summary_part.added", **ids, part=first)
        if deltas:
            for chunk in chunks:
                self.send("response.reasoning_summary_text.delta", **ids, delta=chunk)
            self.send("response.reasoning_summary_text.done", **ids, text=text)
        last = {"type": "summary_text", "text": text}
        self.send("response.reasoning_summary_part.done", **ids, part=last)

    def add(self, item: Item) -> None:
        index = len(self.output)
        if isinstance(item, Pause):
            self.pause_at = len(self.frames)
        elif isinstance(item, Reasoning):
            enc = item.encrypted or f"enc-{self.rid}-{index}"
            base = {"id": f"rs_{self.tag}_{index}", "type": "reasoning", "encrypted_content": enc}
            summary = [{"type": "summary_text", "text": "".join(p)} for p in item.parts]
            chunks = [list(p) for p in item.parts]
            done = {**base, "summary": summary}
            self.item(index, {**base, "summary": []}, done, chunks, item.deltas)
        elif isinstance(item, Text):
            base = {"id": f"msg_{self.tag}_{index}", "type": "message", "role": "assistant"}
            text = "".join(item.chunks)
            part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            added = {**base, "status": "in_progress", "content": []}
            done = {**base, "status": "completed", "content": [part]}
            self.item(index, added, done, [list(item.chunks)])
        else:
            base = {"id": f"fc_{self.tag}_{index}", "type": "function_call"}
            base |= {"call_id": item.call_id, "name": item.name}
            added = {**base, "status": "in_progress", "arguments": ""}
            done = {**base, "status": "completed", "arguments": item.arguments}
            self.item(index, added, done, [split(item.arguments, item.pieces)])


def responses_turn(
    items: Sequence[Item],
    *,
    usage: TokenUsage | None = None,
    response_id: str = "resp_1",
    model: str = "gpt-5",
    end: ResponsesEnd = "completed",
    error_message: str = "The server had an error while processing your request.",
) -> SseReply:
    """One streamed Responses API turn.

    `end` picks the last event: `completed` (with usage), `failed` (error code
    server_error), `incomplete` (max_output_tokens), `error` (a mid-stream error event)
    or `none` (the stream just ends).
    """
    w = _ResponsesWriter(response_id, model)
    w.send("response.created", response=w.response("in_progress"))
    w.send("response.in_progress", response=w.response("in_progress"))
    for item in items:
        w.add(item)
    u = usage or TokenUsage()
    if end == "completed":
        w.send("response.completed", response=w.response("completed", usage=_usage(u)))
    elif end == "failed":
        failure = {"code": "server_error", "message": error_message}
        w.send("response.failed", response=w.response("failed", error=failure))
    elif end == "incomplete":
        details = {"reason": "max_output_tokens"}
        w.send("response.incomplete", response=w.response("incomplete", incomplete_details=details))
    elif end == "error":
        w.send("error", code="server_error", message=error_message, param=None)
    return SseReply(tuple(w.frames), w.pause_at)


def _usage(u: TokenUsage) -> dict[str, Any]:
    return {
        "input_tokens": u.input,
        "input_tokens_details": {"cached_tokens": u.cached, "cache_write_tokens": 0},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": u.reasoning},
        "total_tokens": u.input + u.output,
    }


# ---- Chat Completions streams ---------------------------------------------------------

ChatEnd = Literal["stop", "error", "none"]


def chat_turn(
    items: Sequence[Item],
    *,
    usage: TokenUsage | None = None,
    completion_id: str = "chatcmpl-1",
    model: str = "local-model",
    end: ChatEnd = "stop",
    error_message: str = "The server had an error while processing your request.",
) -> SseReply:
    """One streamed Chat Completions turn, as vLLM/Ollama/OpenAI send it.

    Tool calls take stream indices in order; their first fragment carries id and
    name. `end`: `stop` (finish_reason, a usage chunk when `usage` is given, then
    [DONE]), `error` (a mid-stream `{"error": …}` payload) or `none` (just ends).
    """
    frames: list[str] = []
    pause_at: int | None = None

    def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        frames.append(_sse(_chat_chunk(completion_id, model, [choice])))

    chunk({"role": "assistant", "content": ""})
    calls = 0
    for item in items:
        if isinstance(item, Pause):
            pause_at = len(frames)
        elif isinstance(item, Reasoning):
            for piece in (c for part in item.parts for c in part):
                chunk({item.chat_field: piece})
        elif isinstance(item, Text):
            for piece in item.chunks:
                chunk({"content": piece})
        else:
            head = {"index": calls, "id": item.call_id, "type": "function"}
            chunk({"tool_calls": [{**head, "function": {"name": item.name, "arguments": ""}}]})
            for piece in split(item.arguments, item.pieces):
                chunk({"tool_calls": [{"index": calls, "function": {"arguments": piece}}]})
            calls += 1
    if end == "stop":
        chunk({}, "tool_calls" if calls else "stop")
        if usage is not None:
            frames.append(_sse(_chat_chunk(completion_id, model, [], usage=_chat_usage(usage))))
        frames.append("data: [DONE]\n\n")
    elif end == "error":
        error = {"message": error_message, "type": "server_error", "param": None, "code": None}
        frames.append(_sse({"error": error}))
    return SseReply(tuple(frames), pause_at)


def _chat_chunk(cid: str, model: str, choices: list[Any], **extra: Any) -> dict[str, Any]:
    obj = "chat.completion.chunk"
    chunk = {"id": cid, "object": obj, "created": CREATED_AT, "model": model, "choices": choices}
    return {**chunk, **extra}


def _chat_usage(u: TokenUsage) -> dict[str, Any]:
    return {
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.input + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cached},
    }


# ---- the server -----------------------------------------------------------------------


@dataclass(frozen=True)
class ReceivedRequest:
    path: str
    headers: CIMultiDict[str]
    json: dict[str, Any]
    # The client's end of the TCP connection the request came on: requests with the
    # same one shared a kept-alive connection.
    peer: tuple[str, int] | None = None
    query: Mapping[str, str] = field(default_factory=dict)


class FakeOpenAI:
    """The fake server. See the module docstring for a walk-through.

    `requests` lists every request received, in order. `client_disconnected` is set,
    and `disconnects` counted, when a client hangs up before its reply was complete.
    """

    def __init__(
        self,
        *,
        emulate_cache: bool = False,
        frame_interval_s: float = 0.0,
        root: str = "/v1",
        bearer: str | None = None,
        azure_key: str | None = None,
        deployments: frozenset[str] = frozenset(),
    ) -> None:
        self.requests: list[ReceivedRequest] = []
        self._root = root
        self._bearer = bearer
        self._azure_key = azure_key
        self._deployments = deployments
        # Paces a reply like a model's stream: this long between frames (0: all at once).
        self.frame_interval_s = frame_interval_s
        self._caches: dict[str, PrefixCache] | None = None
        if emulate_cache:
            self._caches = {path: PrefixCache(minimum=1024, step=128) for path in _PATHS}
        self.client_disconnected = asyncio.Event()
        self.stream_paused = asyncio.Event()
        self.disconnects = 0
        self.base_url = ""
        self._queues: dict[str, deque[Reply]] = {RESPONSES_PATH: deque(), CHAT_PATH: deque()}
        self._script: tuple[Reply, ...] = ()
        self._first_turns: deque[Reply] = deque()
        self._release = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._stopping = False

    def add_response(self, *replies: Reply) -> None:
        """Queues replies for `POST /v1/responses`, served first in, first out."""
        self._queues[RESPONSES_PATH].extend(replies)

    def add_chat(self, *replies: Reply) -> None:
        """Queues replies for `POST /v1/chat/completions`."""
        self._queues[CHAT_PATH].extend(replies)

    def add_first_chat_turns(self, *replies: Reply) -> None:
        """Replies for Chat Completions conversations that hold no assistant message yet,
        first in, first out: several variants each get one for their first turn however
        their later turns interleave with the others' first (those go to the queue or
        the script)."""
        self._first_turns.extend(replies)

    def script_chat(self, *replies: Reply) -> None:
        """Answers every Chat Completions conversation with `replies[n]` on its turn n (n:
        the assistant messages it holds), so each of several variants runs the whole
        script whatever their interleaving; queued replies (`add_chat`) come first."""
        self._script = replies

    def release(self) -> None:
        """Lets the replies paused now send the rest of their frames; later ones pause."""
        self._release.set()
        self._release = asyncio.Event()

    async def start(self) -> str:
        app = web.Application()
        if self._azure_key is not None:
            path = "/openai/deployments/{deployment}/chat/completions"
            app.router.add_post(path, self._route(CHAT_PATH))
        else:
            app.router.add_post(f"{self._root}/responses", self._route(RESPONSES_PATH))
            app.router.add_post(f"{self._root}/chat/completions", self._route(CHAT_PATH))
        # Cancellation of the handler is how aiohttp reports a client that hung up.
        self._runner, origin = await serve_on_loopback(app, handler_cancellation=True)
        self.base_url = origin if self._azure_key is not None else f"{origin}{self._root}"
        return self.base_url

    def _route(self, queue: str) -> Any:
        async def handle(request: web.Request) -> web.StreamResponse:
            refused = self._refusal(request)
            if refused is not None:
                self._record(request, {})
                return refused
            return await self._handle(request, queue)

        return handle

    def _refusal(self, request: web.Request) -> web.Response | None:
        """The auth and addressing errors of the emulated service, in its words."""
        if self._bearer is not None:
            given = request.headers.get("Authorization", "")
            if not given.startswith("Bearer "):
                body = {"error": {"message": "No auth credentials found", "code": 401}}
                return web.json_response(body, status=401)
            if given != f"Bearer {self._bearer}":
                return web.json_response(
                    {"error": {"message": "User not found.", "code": 401}}, status=401
                )
        if self._azure_key is None:
            return None
        if "api-version" not in request.query:
            body = {"error": {"code": "404", "message": "Resource not found"}}
            return web.json_response(body, status=404)
        if request.headers.get("api-key") != self._azure_key:
            message = (
                "Access denied due to invalid subscription key or wrong API endpoint. Make "
                "sure to provide a valid key for an active subscription and use a correct "
                "regional API endpoint for your resource."
            )
            return web.json_response({"error": {"code": "401", "message": message}}, status=401)
        if request.match_info["deployment"] not in self._deployments:
            message = (
                "The API deployment for this resource does not exist. If you created the "
                "deployment within the last 5 minutes, please wait a moment and try again."
            )
            body = {"error": {"code": "DeploymentNotFound", "message": message}}
            return web.json_response(body, status=404)
        return None

    def _record(self, request: web.Request, body: dict[str, Any]) -> None:
        transport = request.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        self.requests.append(
            ReceivedRequest(
                request.path, CIMultiDict(request.headers), body, peer, dict(request.query)
            )
        )

    async def stop(self) -> None:
        self._stopping = True
        self._release.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _pause(self) -> None:
        release = self._release
        self.stream_paused.set()
        if not self._stopping:
            await release.wait()

    def _hung_up(self) -> None:
        self.disconnects += 1
        self.client_disconnected.set()

    async def _handle(self, request: web.Request, path: str) -> web.StreamResponse:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            body = {}
        self._record(request, body)
        queue = self._queues.get(path)
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if path == CHAT_PATH and turn == 0 and self._first_turns:
            queue = deque([self._first_turns.popleft()])
        elif not queue and path == CHAT_PATH and self._script:
            queue = deque([self._script[min(turn, len(self._script) - 1)]])
        if not queue:
            nothing = http_error(500, f"FakeOpenAI: no reply queued for {request.path}")
            return web.json_response(nothing.body, status=500)
        reply = queue.popleft()
        if isinstance(reply, ErrorReply):
            return web.json_response(reply.body, status=reply.status)
        if self._caches is not None:
            items = "input" if path == RESPONSES_PATH else "messages"
            hit = openai_lookup(self._caches[path], body, items)
            frames = tuple(openai_usage_frame(frame, hit) for frame in reply.frames)
            reply = SseReply(frames, reply.pause_at)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        try:
            for i, frame in enumerate(reply.frames):
                if i == reply.pause_at:
                    await self._pause()
                if i and self.frame_interval_s:
                    await asyncio.sleep(self.frame_interval_s)
                await response.write(frame.encode())
            if reply.pause_at == len(reply.frames):
                await self._pause()
            await response.write_eof()
        except asyncio.CancelledError:
            self._hung_up()
            raise
        except ConnectionResetError:
            self._hung_up()
        return response
