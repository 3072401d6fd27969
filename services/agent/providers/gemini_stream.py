"""A Gemini `streamGenerateContent` stream read from the raw HTTP body.

google-genai's streaming method decodes each record's JSON, encodes it again, decodes
it a third time and validates a pydantic `GenerateContentResponse` from it: tens of
microseconds per record. It offers no public way to get the HTTP response instead, so
`open_stream` below is a small adapter that does what
`AsyncModels._generate_content_stream` (google-genai 3.6.1) does up to the request —
the SDK builds the request body, authenticates, retries and raises `APIError` on an
error status — and returns the open response. It names these private parts of the
SDK, and nothing else private:

- `Client._api_client`, its `_build_request` and `_async_request`, and the
  `response_stream` of the `HttpResponse` that returns;
- `types._GenerateContentParameters` and `models._GenerateContentParameters_to_mldev`
  (the request body), `_common.convert_to_dict` and
  `_common.encode_unserializable_types` (bytes to base64);
- `types.Part._from_response`, which validates a part as the SDK validates response
  parts (unknown fields dropped), for the parts a continuation sends back.

tests/providers/test_gemini_stream.py fails loudly if any of them moves, and checks
that the adapter's request is the one the public method sends. `ChunkReader` then
decodes each record once and keeps only what the engine and the replay need; the
record layout is in docs/provider-wire-formats.md (Gemini).
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp
from google import genai
from google.genai import _common, models, types

from services.agent.pricing import Usage
from services.agent.providers import base, errors, sse
from services.agent.providers.base import ProviderError, ToolCall
from services.agent.providers.streaming import DeltaMerger

# A long reply comes in hops, each ended by a continuation token; the bound keeps a
# server that never finishes from holding the turn forever.
MAX_HOPS = 64


@dataclass(slots=True)
class StreamBody:
    """The open response of one streamed request: its bytes, and how to let it go."""

    _response: Any  # aiohttp.ClientResponse, or an httpx Response on the httpx transport

    def chunks(self) -> AsyncIterator[bytes]:
        if isinstance(self._response, aiohttp.ClientResponse):
            return self._response.content.iter_any()
        return self._response.aiter_bytes()  # type: ignore[no-any-return]

    async def close(self) -> None:
        """Closes the connection at once if the body is unread (a cancelled turn must
        stop the model); one read to its end has already gone back to the pool."""
        if isinstance(self._response, aiohttp.ClientResponse):
            self._response.close()
        else:
            await self._response.aclose()


async def open_stream(
    client: genai.Client,
    model: str,
    contents: list[types.Content],
    config: types.GenerateContentConfig,
) -> StreamBody:
    """Sends the streamed request as `generate_content_stream` would (Developer API)."""
    api = client._api_client
    if api.vertexai:
        raise ValueError("the raw Gemini stream supports the Developer API only")
    # A copy, as the public method makes: request building may fill in the config.
    parameters = types._GenerateContentParameters(
        model=model, contents=contents, config=config.model_copy(deep=True)
    )
    request = models._GenerateContentParameters_to_mldev(api, parameters, None, parameters)
    path = "{model}:streamGenerateContent?alt=sse"
    if url := request.get("_url"):
        path = path.format_map(url)
    if query := request.get("_query"):
        path = f"{path}?{urlencode(query)}"
    request.pop("config", None)
    request = _common.encode_unserializable_types(_common.convert_to_dict(request))
    http_request = api._build_request("post", path, request, None)
    response = await api._async_request(http_request=http_request, stream=True)
    return StreamBody(response.response_stream)


def model_parts(parts: Sequence[dict[str, Any]]) -> list[types.Part]:
    """Streamed parts as the SDK's own types, signatures decoded, for the next request."""
    return [types.Part._from_response(response=part, kwargs={}) for part in parts]


@dataclass(slots=True)
class ChunkTurn:
    text: str
    calls: list[ToolCall]
    usage: Usage
    parts: list[dict[str, Any]]  # every part as streamed: a signature may ride on any
    generated_ids: set[str] = field(default_factory=set)  # ids the API did not send


class ChunkReader:
    """Reads one turn's records; `feed` returns the stream events of one batch."""

    def __init__(self, config: base.SessionConfig) -> None:
        self._config = config
        self._turn = ChunkTurn("", [], Usage(), [])
        self._text: list[str] = []
        self._usage: dict[str, Any] | None = None
        self._merger = DeltaMerger()
        self._resume: str | None = None  # the continuationToken a hop ended with
        self._banked = Usage()  # the usage of the hops before this one
        self.hops = 1
        self.finished = False
        self.failure: ProviderError | None = None  # raised once the events before it are out

    def feed(self, batch: list[sse.SseEvent]) -> list[base.StreamEvent]:
        merger = self._merger
        parts = self._turn.parts
        for event in batch:
            record = sse.loads(event.data)
            if "error" in record:
                self.failure = _record_error(self._config, record["error"])
                break
            usage = record.get("usageMetadata")
            if usage is not None:
                self._usage = usage  # a running total: the last one wins
            if record.get("promptFeedback") is not None:
                self.finished = True  # a blocked prompt ends the turn without candidates
            candidates = record.get("candidates")
            if not candidates:
                continue
            candidate = candidates[0]
            if reason := candidate.get("finishReason"):
                if reason == "CONTINUATION" and candidate.get("continuationToken"):
                    self._resume = candidate["continuationToken"]
                else:
                    self.finished = True
            for part in (candidate.get("content") or {}).get("parts") or ():
                parts.append(part)
                call = part.get("functionCall")
                if call is not None:
                    self._call(call)
                elif text := part.get("text"):
                    if part.get("thought"):
                        merger.thinking(text)
                    else:
                        self._text.append(text)
                        merger.text(text)
        return merger.take()

    def next_hop(self) -> bytes | None:
        """The token to request the turn's next hop with, if the last one stopped at the
        per-request limit (finishReason CONTINUATION) rather than finishing."""
        token, self._resume = self._resume, None
        if token is None or self.finished:
            return None
        if self.hops >= MAX_HOPS:
            raise errors.stream_failed(
                self._config.provider, f"the reply did not finish within {MAX_HOPS} continuations"
            )
        self.hops += 1
        # Each hop is its own request, whose usage the API counts from zero.
        self._banked = self._banked + _usage_of(self._usage)
        self._usage = None
        return base64.b64decode(token)

    def turn(self) -> ChunkTurn:
        """The finished turn; a stream that ended before a finish reason fails here."""
        if not self.finished:
            raise errors.stream_failed(
                self._config.provider, "the stream ended early, before the reply was complete"
            )
        turn = self._turn
        turn.text = "".join(self._text)
        turn.usage = self._banked + _usage_of(self._usage)
        return turn

    def _call(self, call: dict[str, Any]) -> None:
        call_id = call.get("id")
        if not call_id:
            call_id = f"tool-{secrets.token_hex(6)}"
            self._turn.generated_ids.add(call_id)
        name = call.get("name") or "unknown_tool"
        arguments = call.get("args") or {}
        if not isinstance(arguments, dict):
            raise TypeError("functionCall.args is not an object")
        self._turn.calls.append(ToolCall(call_id, name, arguments))
        # Gemini sends arguments whole, so they arrive as one fragment (the engine
        # replays a whole create_file content as a paced preview: PreviewReplay).
        self._merger.arguments(call_id, name, json.dumps(arguments))


def api_failure(config: base.SessionConfig, code: int, message: str, details: str) -> ProviderError:
    """An error the API answered, as a status or as a record inside the stream."""
    text = f"{message} {details}"
    # Gemini answers a wrong key with 400 INVALID_ARGUMENT, not 401.
    invalid_key = code == 400 and ("API_KEY_INVALID" in text or "API key not valid" in text)
    return errors.status_error(config, 401 if invalid_key else code, message or "request failed")


def _record_error(config: base.SessionConfig, error: Any) -> ProviderError:
    if not isinstance(error, dict):
        return errors.stream_failed(config.provider, "the server reported an error")
    code = error.get("code")
    message = str(error.get("message") or error.get("status") or "")
    details = str(error.get("details") or "")
    return api_failure(config, code if isinstance(code, int) else 500, message, details)


def _usage_of(meta: dict[str, Any] | None) -> Usage:
    if meta is None:
        return Usage()
    return Usage.cached_within(
        meta.get("promptTokenCount") or 0,
        meta.get("cachedContentTokenCount"),
        # Gemini counts thinking apart; Usage's output includes it.
        (meta.get("candidatesTokenCount") or 0) + (meta.get("thoughtsTokenCount") or 0),
        meta.get("totalTokenCount") or 0,
    )
