"""A lean fake of the OpenAI Responses API for `bench/load_real.py`, one process of several.

Run by the bench: `python bench/sse_fake.py --port P --epoch-us E --stamps M --stats PATH`.
Every fake process binds the same port with SO_REUSEPORT, so the kernel spreads the
agents' connections over them.

Each first turn (a request without `function_call_output`) streams the same reply: the
assistant says one line, then one `create_file` call whose arguments arrive as 8-byte
`response.function_call_arguments.delta` events, one every `--pace-ms` (default 20, so
50 deltas/s). A continuation gets a short closing text at once. The bytes are those of
`tests/fakes/openai_server.py` (the wire format the real SDK accepts), rendered once at
start and cut into per-delta templates, so serving a delta is one concatenation and one
`transport.write`.

The page is `Page.head`, then `M` 8-character *stamps*, then `Page.tail`. A stamp is the
CLOCK_MONOTONIC time the fake wrote that delta, in µs after `--epoch-us`, as 8 hex digits
(it wraps after 71 minutes; one bench size lasts about one). Hex digits need no JSON
escape, so the browser's `setCode` value is the page byte for byte and the load client
reads the stamps straight out of the frame text (`Page.visible`).

Pacing: one timer loop per process. A stream keeps the phase it started with: the loop
ticks every `QUANTUM_S` and each tick serves the streams of its slot (`pace / quantum`
slots), so there is one timer wake-up per tick, not per delta. A late tick serves
everything that fell due meanwhile (a socket backlog) and counts as late in the stats,
`<deltas> <late deltas> <streams>` rewritten every 0.25 s.

The HTTP side is HTTP/1.1 with keep-alive and chunked responses, which is all httpx
needs; anything but `POST /v1/responses` gets a 404 with an OpenAI-shaped error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: find tests/

from tests.fakes.openai_server import FunctionCall, Text, TokenUsage, responses_turn  # noqa: E402

STAMP_CHARS: Final = 8  # = the argument delta size
PLACEHOLDER: Final = "#" * STAMP_CHARS
QUANTUM_S: Final = 0.002
LATE_S: Final = 0.010  # a tick this late counts its deltas as late
ARGS_PREFIX: Final = '{"path": "index.html", "content": "'
ARGS_SUFFIX: Final = '"}'


def _pad(text: str, extra: int) -> str:
    """`text` with spaces before its last character, so that `len + extra` is a multiple
    of the delta size and the stamps fall on whole deltas."""
    spaces = -(len(text) + extra) % STAMP_CHARS
    return text[:-1] + " " * spaces + text[-1]


@dataclass(frozen=True)
class Page:
    """The streamed page's layout, shared by the fake (which writes it) and the client
    (which reads stamps out of `setCode` frames)."""

    stamps: int
    head: str = _pad("<!DOCTYPE html><html><body><p>", len(ARGS_PREFIX))
    tail: str = _pad("</p></body></html>", len(ARGS_SUFFIX))

    def arguments(self, stamps: str) -> str:
        return ARGS_PREFIX + self.head + stamps + self.tail + ARGS_SUFFIX

    def visible(self, code_length: int) -> int:
        """How many stamps a page of `code_length` characters shows in full."""
        return max(0, min(self.stamps, (code_length - len(self.head)) // STAMP_CHARS))


def chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


HEADERS: Final = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)
LAST_CHUNK: Final = b"0\r\n\r\n"


@dataclass(frozen=True)
class Reply:
    """The first turn cut into bytes: what goes out at once, one (before, after) pair per
    stamped delta, and the ending, split where the whole arguments text goes."""

    page: Page
    opening: bytes
    deltas: tuple[tuple[bytes, bytes], ...]
    ending: tuple[bytes, ...]
    closing: bytes  # the whole continuation reply

    @classmethod
    def render(cls, page: Page) -> Reply:
        template = page.arguments(PLACEHOLDER * page.stamps)
        call = FunctionCall("call_1", "create_file", template, len(template) // STAMP_CHARS)
        usage = TokenUsage(input=3000, output=len(template) // 4)
        frames = responses_turn([Text(["Building the page."]), call], usage=usage).frames
        marker = f'"delta":"{PLACEHOLDER}"'
        stamped = [i for i, f in enumerate(frames) if marker in f]
        assert len(stamped) == page.stamps, "the stamps must fall on whole deltas"
        deltas = []
        for i in stamped:
            before, after = (part.encode() for part in frames[i].split(PLACEHOLDER))
            size = len(before) + STAMP_CHARS + len(after)
            deltas.append((b"%x\r\n%s" % (size, before), after + b"\r\n"))
        escaped = json.dumps(template)[1:-1]
        rest = "".join(frames[stamped[-1] + 1 :])
        closing = responses_turn([Text(["Done: the page is in index.html."])]).frames
        return cls(
            page=page,
            opening=HEADERS + chunk("".join(frames[: stamped[0]]).encode()),
            deltas=tuple(deltas),
            ending=tuple(part.encode() for part in rest.split(escaped)),
            closing=HEADERS + chunk("".join(closing).encode()) + LAST_CHUNK,
        )


class Stream:
    """One first-turn reply in progress on one connection."""

    __slots__ = ("index", "stamps", "transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.index = 0
        self.stamps: list[bytes] = []


class Pacer:
    """The one timer loop: slot k of `pace / quantum` slots is served on ticks k, k + n, …"""

    def __init__(self, reply: Reply, pace_s: float, epoch_us: int, stats: Path) -> None:
        self.reply = reply
        self.slots: list[list[Stream]] = [[] for _ in range(max(1, round(pace_s / QUANTUM_S)))]
        self.tick = 0
        self.epoch_s = epoch_us / 1e6
        self.stats = stats
        self.deltas = self.late = self.streams = 0

    def add(self, stream: Stream) -> None:
        self.streams += 1
        self.slots[(self.tick + 1) % len(self.slots)].append(stream)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        base = loop.time()
        next_stats = base
        while True:
            now = loop.time()
            due = int((now - base) / QUANTUM_S)
            lateness = now - (base + self.tick * QUANTUM_S)
            stamp = b"%08x" % (int((now - self.epoch_s) * 1e6) & 0xFFFFFFFF)
            while self.tick <= due:
                index = self.tick % len(self.slots)
                served = self._serve(self.slots[index], stamp, lateness > LATE_S)
                self.slots[index] = served
                self.tick += 1
            if now >= next_stats:
                next_stats = now + 0.25
                self._write_stats()
            await asyncio.sleep(base + self.tick * QUANTUM_S - loop.time())

    def _serve(self, streams: list[Stream], stamp: bytes, late: bool) -> list[Stream]:
        """Writes each stream's next delta; returns the streams that go on."""
        deltas = self.reply.deltas
        going = []
        for stream in streams:
            if stream.transport.is_closing():
                continue  # the agent hung up (a cancelled generation)
            before, after = deltas[stream.index]
            stream.transport.write(before + stamp + after)
            stream.stamps.append(stamp)
            stream.index += 1
            if stream.index < len(deltas):
                going.append(stream)
            else:
                self._finish(stream)
        self.deltas += len(streams)
        if late:
            self.late += len(streams)
        return going

    def _finish(self, stream: Stream) -> None:
        # The done events repeat the whole arguments text: this stream's, stamps included.
        arguments = self.reply.page.arguments(b"".join(stream.stamps).decode())
        escaped = json.dumps(arguments)[1:-1].encode()
        stream.transport.write(chunk(escaped.join(self.reply.ending)) + LAST_CHUNK)

    def _write_stats(self) -> None:
        temporary = self.stats.with_suffix(".tmp")
        temporary.write_text(f"{self.deltas} {self.late} {self.streams}\n")
        os.replace(temporary, self.stats)


class Connection(asyncio.Protocol):
    """One agent connection: requests one after the other (keep-alive, no pipelining)."""

    def __init__(self, pacer: Pacer) -> None:
        self.pacer = pacer
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
            length = 0
            for line in head[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return  # the body is still on its way
            body = bytes(self.buffer[end + 4 : end + 4 + length])
            del self.buffer[: end + 4 + length]
            self._request(head[0], body)

    def _request(self, request_line: str, body: bytes) -> None:
        assert self.transport is not None
        method, path, _ = [*request_line.split(" "), "", ""][:3]
        if method != "POST" or path != "/v1/responses":
            error = {"message": f"no route {method} {path}", "type": "invalid_request_error"}
            payload = json.dumps({"error": error}).encode()
            self.transport.write(
                b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(payload), payload)
            )
        elif b"function_call_output" in body:
            self.transport.write(self.pacer.reply.closing)
        else:
            self.transport.write(self.pacer.reply.opening)
            self.pacer.add(Stream(self.transport))


async def serve(args: argparse.Namespace) -> None:
    page = Page(args.stamps)
    pacer = Pacer(Reply.render(page), args.pace_ms / 1000, args.epoch_us, Path(args.stats))
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: Connection(pacer), "127.0.0.1", args.port, reuse_port=True, backlog=1024
    )
    # The line bench/load.py's `start` waits for.
    print(json.dumps({"msg": "fake listening", "port": args.port}), file=sys.stderr, flush=True)
    async with server:
        await pacer.run()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--epoch-us", type=int, required=True, help="CLOCK_MONOTONIC µs")
    parser.add_argument("--stamps", type=int, default=1500, help="stamped deltas per page")
    parser.add_argument("--pace-ms", type=float, default=20.0)
    parser.add_argument("--stats", required=True)
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
