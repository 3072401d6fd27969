"""The floor bench's model streams and its fake model server (see bench/floor.py).

Each API's stream is computed once, as bytes, before the server listens, so serving it
costs the fake almost nothing: one create_file whose JSON arguments arrive as 8-byte
deltas, and a short text turn for the request that carries the tool's result. Gemini
sends function arguments whole, so its stream is the page as 8-byte text parts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

DELTA_BYTES: Final = 8
KEY: Final = "sk-floor-bench"
CALL_ID: Final = "call_floor_1"

# -- the streams ---------------------------------------------------------------------------


def page(size: int) -> str:
    """An HTML page of about `size` characters, with quotes and newlines to escape."""
    rows, i = [], 0
    body = 0
    while body < size:
        row = f'  <div class="card p-4 text-gray-700">Item {i}: fresh "bread" &amp; cake</div>\n'
        rows.append(row)
        body += len(row)
        i += 1
    return "<!DOCTYPE html>\n<html>\n<body>\n" + "".join(rows) + "</body>\n</html>\n"


def pieces(text: str, count: int) -> list[str]:
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def arguments_for(deltas: int) -> tuple[str, str]:
    """(the page, create_file's JSON arguments about `deltas` × 8 bytes long)."""
    html = page(deltas * DELTA_BYTES * 9 // 10)
    args = json.dumps({"path": "index.html", "content": html})
    return html, args


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _response(status: str, output: list[Any]) -> dict[str, Any]:
    usage = {
        "input_tokens": 1000,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5000,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 6000,
    }
    done = status == "completed"
    return {
        "id": "resp_floor",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": "gpt-5.5",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage if done else None,
    }


def responses_streams(deltas: int) -> tuple[bytes, bytes]:
    _, args = arguments_for(deltas)
    out: list[bytes] = []

    def send(kind: str, **fields: Any) -> None:
        out.append(_sse({"type": kind, **fields, "sequence_number": len(out)}, kind))

    item = {"id": "fc_1", "type": "function_call", "call_id": CALL_ID, "name": "create_file"}
    send("response.created", response=_response("in_progress", []))
    send("response.output_item.added", output_index=0, item={**item, "arguments": ""})
    for piece in pieces(args, deltas):
        send("response.function_call_arguments.delta", item_id="fc_1", output_index=0, delta=piece)
    send("response.function_call_arguments.done", item_id="fc_1", output_index=0, arguments=args)
    done = {**item, "arguments": args, "status": "completed"}
    send("response.output_item.done", output_index=0, item=done)
    send("response.completed", response=_response("completed", [done]))
    first = b"".join(out)
    out.clear()
    text = {"type": "output_text", "text": "Done.", "annotations": []}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed"}
    ids = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    send("response.output_text.delta", **ids, delta="Done.")
    send("response.completed", response=_response("completed", [{**message, "content": [text]}]))
    return first, b"".join(out)


_CHUNK: Final = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "bench"}


def chat_streams(deltas: int) -> tuple[bytes, bytes]:
    _, args = arguments_for(deltas)

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse({**_CHUNK, "choices": [choice]})

    head = {"index": 0, "id": CALL_ID, "type": "function"}
    out = [chunk({"tool_calls": [{**head, "function": {"name": "create_file", "arguments": ""}}]})]
    out += [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]})
        for p in pieces(args, deltas)
    ]
    usage = {"prompt_tokens": 1000, "completion_tokens": 5000, "total_tokens": 6000}
    tail = _sse({**_CHUNK, "choices": [], "usage": usage})
    out += [chunk({}, "tool_calls"), tail, b"data: [DONE]\n\n"]
    second = [chunk({"content": "Done."}), chunk({}, "stop"), b"data: [DONE]\n\n"]
    return b"".join(out), b"".join(second)


def anthropic_streams(deltas: int) -> tuple[bytes, bytes]:
    _, args = arguments_for(deltas)

    def turn(block: dict[str, Any], kind: str, parts: list[str], stop: str) -> bytes:
        message: dict[str, Any] = {"id": "msg_floor", "type": "message", "role": "assistant"}
        message |= {"model": "claude", "content": [], "stop_reason": None, "stop_sequence": None}
        message["usage"] = {"input_tokens": 1000, "output_tokens": 1}
        field = "partial_json" if kind == "input_json_delta" else "text"
        out = [_sse({"type": "message_start", "message": message}, "message_start")]
        start = {"type": "content_block_start", "index": 0, "content_block": block}
        out.append(_sse(start, "content_block_start"))
        for part in parts:
            delta = {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": kind, field: part},
            }
            out.append(_sse(delta, "content_block_delta"))
        out.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        end: dict[str, Any] = {"type": "message_delta", "usage": {"output_tokens": 5000}}
        end["delta"] = {"stop_reason": stop, "stop_sequence": None}
        out.append(_sse(end, "message_delta"))
        out.append(_sse({"type": "message_stop"}, "message_stop"))
        return b"".join(out)

    tool = {"type": "tool_use", "id": "toolu_floor", "name": "create_file", "input": {}}
    first = turn(tool, "input_json_delta", ["", *pieces(args, deltas)], "tool_use")
    second = turn({"type": "text", "text": ""}, "text_delta", ["Done."], "end_turn")
    return first, second


def gemini_streams(deltas: int) -> tuple[bytes, bytes]:
    html, _ = arguments_for(deltas)
    parts = pieces(html, deltas)
    usage = {"promptTokenCount": 1000, "candidatesTokenCount": 5000, "totalTokenCount": 6000}
    out = []
    for i, part in enumerate(parts):
        candidate: dict[str, Any] = {"content": {"parts": [{"text": part}], "role": "model"}}
        record: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini"}
        if i == len(parts) - 1:
            candidate["finishReason"] = "STOP"
            record["usageMetadata"] = usage
        out.append(f"data: {json.dumps(record, separators=(',', ':'))}\r\n\r\n".encode())
    return b"".join(out), b""


@dataclass(frozen=True)
class Provider:
    id: str
    title: str
    model: str
    streams: Callable[[int], tuple[bytes, bytes]]
    env: Callable[[str], dict[str, str]]  # origin of the fake → the agent's environment
    path: str  # the floor client's POST path
    floor_body: dict[str, Any]


PROVIDERS: Final = {
    p.id: p
    for p in (
        Provider(
            "responses",
            "OpenAI Responses",
            "gpt-5.5 (low thinking)",
            responses_streams,
            lambda o: {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": f"{o}/v1"},
            "/v1/responses",
            {"model": "gpt-5.5", "input": "x", "stream": True},
        ),
        Provider(
            "anthropic",
            "Anthropic Messages",
            "claude-sonnet-4-6",
            anthropic_streams,
            lambda o: {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": o},
            "/v1/messages",
            {"model": "claude", "messages": [], "stream": True},
        ),
        Provider(
            "gemini",
            "Gemini (text parts)",
            "gemini-3-flash-preview (minimal thinking)",
            gemini_streams,
            lambda o: {"GEMINI_API_KEY": KEY, "GEMINI_BASE_URL": o},
            "/v1beta/models/gemini:streamGenerateContent?alt=sse",
            {"contents": []},
        ),
        Provider(
            "chat",
            "OpenAI Chat Completions",
            "local:bench",
            chat_streams,
            lambda o: {"S2C_LOCAL_MODELS": "bench", "S2C_LOCAL_BASE_URL": f"{o}/v1"},
            "/v1/chat/completions",
            {"model": "bench", "messages": [], "stream": True},
        ),
    )
}


# -- the fake model server (its own process) ---------------------------------------------------


def has_tool_result(body: Any) -> bool:
    """Whether a request carries a tool's result (so the model's next turn is due)."""
    if isinstance(body, dict):
        if (
            body.get("type") in ("function_call_output", "tool_result")
            or body.get("role") == "tool"
        ):
            return True
        return any(has_tool_result(v) for v in body.values())
    if isinstance(body, list):
        return any(has_tool_result(v) for v in body)
    return False


def serve(deltas: int, write_bytes: int) -> None:
    from aiohttp import web

    streams = {p.id: p.streams(deltas) for p in PROVIDERS.values()}

    def route(provider: str) -> Callable[[web.Request], Any]:
        first, second = streams[provider]

        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.json()
            data = second if second and has_tool_result(body) else first
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            for i in range(0, len(data), write_bytes):
                await response.write(data[i : i + write_bytes])
            await response.write_eof()
            return response

        return handle

    async def main() -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/responses", route("responses"))
        app.router.add_post("/v1/chat/completions", route("chat"))
        app.router.add_post("/v1/messages", route("anthropic"))
        app.router.add_post("/{version}/models/{action}", route("gemini"))
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        print(runner.addresses[0][1], flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
