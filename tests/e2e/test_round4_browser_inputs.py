"""Issue 35's browser-input attacks (items 1 and 2) replayed against a real tool worker and
gateway: a page whose markup made the preview's regular expressions backtrack on the
worker's event loop, and a Google Fonts URL whose weight overflowed inside the browser's
route handler, where the browser library re-raised it from another user's next call.

One tool worker (with its Chromium) and one gateway for the module; no agent is needed.
The stall and failure figures are measured for the issue's note, not asserted as times:
each bystander call carries a generous deadline only so that a frozen worker fails the
test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import grpc
import pytest
import pytest_asyncio
from playwright.async_api import Route
from s2c.common.v1 import common_pb2
from s2c.tools.v1 import tool_service_pb2 as tpb
from s2c.tools.v1 import tool_service_pb2_grpc as tpb_grpc

from services.common.vendor_route import route_offline
from tests.browser.pages import chromium
from tests.processes import Service, base_env, start_service

pytestmark = pytest.mark.asyncio(loop_scope="module")

# A preview takes about a second; a worker whose loop is held fails this deadline.
DEADLINE_S = 20.0
# About 60 KB of unclosed stylesheet links: hours of backtracking before issue 35.
LINKS = "<link rel=stylesheet " * 2900
BAD_WEIGHTS = ("inf", "1e999", "9" * 400)
_ids = itertools.count()


@dataclass
class Stack:
    tools: tpb_grpc.ToolServiceAsyncStub
    gateway: str  # http://127.0.0.1:<port>


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    env = base_env(tmp_path_factory.mktemp("round4-browser"))
    metrics = ["--metrics-listen", "127.0.0.1:0"]
    # The gateway's /vendor/ route needs no agent; the address is never dialled.
    started = await asyncio.gather(
        start_service("tools", ["--listen", "127.0.0.1:0", *metrics], env),
        start_service("gateway", ["--port", "0"], {**env, "S2C_AGENT_ADDR": "127.0.0.1:9"}),
        return_exceptions=True,
    )
    services = [s for s in started if isinstance(s, Service)]
    try:
        tools, gateway = started
        assert isinstance(tools, Service), tools
        assert isinstance(gateway, Service), gateway
        async with grpc.aio.insecure_channel(f"127.0.0.1:{tools.port}") as channel:
            yield Stack(tpb_grpc.ToolServiceStub(channel), f"http://127.0.0.1:{gateway.port}")
    finally:
        for service in services:
            if service.process.returncode is None:
                service.process.kill()
                await service.process.wait()


async def preview(stack: Stack, html: str) -> tpb.ExecuteToolResponse:
    """`screenshot_preview` of a one-page project; a fresh call id each time, so the
    worker's idempotency cache never answers in place of a render."""
    request = tpb.ExecuteToolRequest(
        call=tpb.ToolCall(id=f"round4-{next(_ids)}", name="screenshot_preview"),
        file=common_pb2.FileState(path="index.html", content=html),
    )
    return await stack.tools.ExecuteTool(request, timeout=DEADLINE_S)


def bystander_page(n: int) -> str:
    return f"<!doctype html><html><body><h1>Bystander {n}</h1></body></html>"


# -- item 1: markup that made the inlining regexes backtrack ----------------------------


async def test_a_page_of_unclosed_links_neither_freezes_the_worker_nor_fails_a_bystander(
    stack: Stack,
) -> None:
    hostile = asyncio.create_task(preview(stack, LINKS))
    bystanders: list[bool] = []
    try:
        # Until the hostile preview is done, someone else's previews keep coming: a worker
        # whose loop is held misses their deadline (DEADLINE_EXCEEDED fails the test).
        while not hostile.done() or not bystanders:
            bystanders.append((await preview(stack, bystander_page(len(bystanders)))).ok)
        attacked = await hostile
    finally:
        hostile.cancel()

    assert bystanders == [True] * len(bystanders)
    assert attacked.ok, attacked.result


# -- item 2: a font weight that overflowed in the browser's route handler ---------------


def fonts_page() -> str:
    links = "".join(
        f'<link rel="stylesheet" href="https://fonts.googleapis.com/css2?family=Inter:wght@{w}">'
        for w in BAD_WEIGHTS
    )
    return f'<!doctype html>{links}<p style="font-family:Inter">x'


async def test_an_overflowing_font_weight_fails_no_preview_of_anyone(stack: Stack) -> None:
    # Hostile and bystander previews side by side: before issue 35 the handler's
    # OverflowError was re-raised from whichever call came next on the shared connection.
    calls = [preview(stack, fonts_page()), *(preview(stack, bystander_page(n)) for n in (1, 2))]

    answers = await asyncio.gather(*calls)

    assert [answer.ok for answer in answers] == [True] * len(calls), [
        answer.result for answer in answers if not answer.ok
    ]


async def test_a_failing_route_handler_never_fails_another_pages_call() -> None:
    # The structural half: whatever fails inside a page's request handler stays with that
    # request. Playwright re-raises a handler's error from the next call on its connection.
    failed = asyncio.Event()

    async def broken(route: Route) -> None:
        failed.set()
        raise RuntimeError("a handler bug")

    async with chromium() as browser:
        hostile = await browser.new_context()
        await route_offline(hostile, None, broken)
        page = await hostile.new_page()
        bystander = await (await browser.new_context()).new_page()
        await page.set_content(
            '<link rel="stylesheet" href="https://example.test/a.css">', wait_until="commit"
        )
        await failed.wait()
        # Twice: the first call may be sent before the handler's error is recorded.
        answers = [await bystander.evaluate("1 + 1") for _ in range(2)]

    assert answers == [2, 2]


async def test_the_gateway_answers_a_bad_font_weight_with_a_400_that_says_why(
    stack: Stack,
) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{stack.gateway}/vendor/index.json") as index:
            base = (await index.json())["base"]
        for weight in BAD_WEIGHTS:
            url = f"{stack.gateway}{base}fonts.googleapis.com/css2?family=Inter:wght@{weight}"
            async with session.get(url, allow_redirects=False) as response:
                assert response.status == 400, (weight, response.status)
                detail = (await response.json())["detail"]
            assert "font weight" in detail
            assert "1 to 1000" in detail
