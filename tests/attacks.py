"""Hostile inputs of issue 24's attacks, shared by `tests/e2e/test_round3_attacks.py` and
`bench/images.py`: images whose pixels would take gigabytes, and a site of pages too large
or too slow for the workers' browser."""

from __future__ import annotations

import asyncio
import base64
import io
import struct
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pillow_heif
from aiohttp import web
from PIL import Image
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc


def solid_png(width: int, height: int) -> bytes:
    """A valid one-colour RGB PNG, compressed row by row (never whole in memory): a
    9000×9000 one is 258 KB and 324 MB once decoded."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + body))
        return struct.pack(">I", len(body)) + kind + body + crc

    packer = zlib.compressobj(9)
    row = b"\x00" + b"\x30\x60\x90" * width
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


def _claiming(data: bytes, marker: bytes, offset: int, fmt: str, *size: int) -> bytes:
    """A small real image whose header claims `size` (what a decoder would allocate)."""
    out = bytearray(data)
    struct.pack_into(fmt, out, out.find(marker) + offset, *size)
    return bytes(out)


def jpeg_bomb(width: int, height: int, *, progressive: bool) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (16, 16)).save(out, "JPEG", progressive=progressive)
    marker = b"\xff\xc2" if progressive else b"\xff\xc0"
    return _claiming(out.getvalue(), marker, 5, ">HH", height, width)


def webp_bomb(side: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGBA", (16, 16), (1, 2, 3, 4)).save(out, "WEBP", lossless=True)
    data = bytearray(out.getvalue())  # a VP8L chunk: 14-bit width and height, less one
    bits = int.from_bytes(data[21:25], "little") & ~((1 << 28) - 1)
    data[21:25] = (bits | (side - 1) | ((side - 1) << 14)).to_bytes(4, "little")
    return bytes(data)


def heic_bomb(side: int) -> bytes:
    out = io.BytesIO()
    pillow_heif.from_pillow(Image.new("RGB", (64, 64))).save(out, quality=50)
    return _claiming(out.getvalue(), b"ispe", 8, ">II", side, side)


def bombs() -> list[tuple[str, str, bytes]]:
    """(what it claims, media type, bytes) for a gigapixel header of each other format."""
    return [
        ("JPEG claiming 65000x65000", "image/jpeg", jpeg_bomb(65000, 65000, progressive=False)),
        (
            "progressive JPEG claiming 30000x30000",
            "image/jpeg",
            jpeg_bomb(30000, 30000, progressive=True),
        ),
        ("WebP claiming 16384x16384", "image/webp", webp_bomb(16384)),
        ("HEIC claiming 20000x20000", "image/heic", heic_bomb(20000)),
    ]


def data_url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


class Site:
    """Pages for the workers' browser: `/page?w=W&h=H` (a gradient block of that size) and
    `/slow`, whose document only comes once `release` is set."""

    def __init__(self) -> None:
        self.port = 0
        self.release = asyncio.Event()
        self.slow_arrived = 0
        self.two_slow = asyncio.Event()  # set once two requests for /slow wait

    async def page(self, request: web.Request) -> web.Response:
        width, height = int(request.query["w"]), int(request.query["h"])
        html = (
            "<!doctype html><body style='margin:0'><div style='width:"
            f"{width}px;height:{height}px;background:linear-gradient(90deg,#c00,#00c)'>"
            "</div></body>"
        )
        return web.Response(text=html, content_type="text/html")

    async def slow(self, _: web.Request) -> web.Response:
        self.slow_arrived += 1
        if self.slow_arrived == 2:
            self.two_slow.set()
        await self.release.wait()
        return web.Response(text="<p>late</p>", content_type="text/html")


@asynccontextmanager
async def serving_site() -> AsyncIterator[Site]:
    """The site on a loopback port; route a `.test` name to it (S2C_TEST_EGRESS_ROUTES)."""
    site = Site()
    app = web.Application()
    app.router.add_get("/page", site.page)
    app.router.add_get("/slow", site.slow)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    site.port = runner.addresses[0][1]
    try:
        yield site
    finally:
        site.release.set()
        await runner.cleanup()


async def demo_previews(stub: pb_grpc.AgentServiceAsyncStub, n: int) -> list[tuple[int, bool]]:
    """(variant index, ok) of each `screenshot_preview` of a 2-variant demo generation. Its
    page is its own (`n` is in the prompt): an identical call would be the worker's cached
    answer, not a preview."""
    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_CREATE,
        input_mode=pb.INPUT_MODE_TEXT,
        prompt=pb.Prompt(text=f"pricing page number {n}"),
        models=["demo"],
        variant_count=2,
    )
    previews: list[tuple[int, bool]] = []
    async for message in stub.GenerateCode(request):
        for event in message.events:
            result = event.tool_result
            if event.WhichOneof("payload") == "tool_result" and result.name == "screenshot_preview":
                previews.append((event.variant_index, result.ok))
                if not result.ok:  # shown with a failing test's output: why it failed
                    print(f"preview of variant {event.variant_index} failed: {result.output}")
    return previews
