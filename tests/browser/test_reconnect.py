"""The built-in UI re-attaches to its generation when the connection drops mid-way.

The page reaches the gateway through a loopback TCP proxy the test can cut, as a network
would: the browser sees its WebSocket die (1006), the gateway a vanished peer, in the
middle of a streamed `create_file`. While the proxy refuses new sockets the UI shows that
it is reconnecting; once it lets them through, the UI re-attaches with
`{resumeGenerationId, afterSequence}`, gets each variant's code back whole and never
older than what it held, and must end on exactly the page an undisturbed run of the same
generation ends on: no frame lost, none twice. A generation cancelled while the page was
away ends, once re-attached, as cancelled.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from itertools import takewhile
from pathlib import Path
from typing import Any

import grpc
import pytest
from playwright.async_api import Browser, Page, WebSocket, expect
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.agent.settings import AgentSettings
from tests.browser.pages import load_ui, local_page
from tests.gateway.test_code_stream import client_code
from tests.suite import Suite, running_suite

GENERATION_TIMEOUT_MS = 30_000
# Slow enough that the drop and the re-attach both land while the variants still stream.
DEMO_PACE_S = 0.03
# The cut comes once the page holds this much of option 1's streamed file.
CUT_AFTER_CHARS = 400

pytestmark = pytest.mark.asyncio(loop_scope="module")


class CuttableProxy:
    """Forwards 127.0.0.1:`port` to the gateway. `cut()` kills the open WebSocket
    connections and refuses new ones until `heal()`; plain HTTP always goes through."""

    def __init__(self, target_port: int) -> None:
        self._target_port = target_port
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._sockets: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._blocked = False
        self.refused = asyncio.Event()
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        for writer in self._open:
            writer.transport.abort()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def cut(self) -> None:
        self._blocked = True
        for pair in self._sockets:
            for writer in pair:
                writer.transport.abort()  # a reset, not a close handshake

    def heal(self) -> None:
        self._blocked = False

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._target_port)
        pair = (writer, up_writer)
        self._open.update(pair)
        try:
            await asyncio.gather(
                self._pipe(reader, up_writer, pair), self._pipe(up_reader, writer, None)
            )
        finally:
            self._sockets.discard(pair)
            self._open.difference_update(pair)

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        pair: tuple[asyncio.StreamWriter, asyncio.StreamWriter] | None,
    ) -> None:
        """One direction; `pair` is given for the browser's, where requests start."""
        try:
            while data := await reader.read(65536):
                if pair is not None and data.startswith(b"GET /generate-code"):
                    if self._blocked:
                        self.refused.set()
                        for w in pair:
                            w.transport.abort()
                        return
                    self._sockets.add(pair)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            writer.transport.abort()  # pass a reset on as a reset
            return
        # Closing flushes what is buffered; the other direction then sees its end too.
        writer.close()


@dataclass
class Sockets:
    """Per WebSocket the page opened: the frames it sent and the frames it received."""

    sent: list[list[dict[str, Any]]] = field(default_factory=list)
    received: list[list[dict[str, Any]]] = field(default_factory=list)
    coding: asyncio.Event = field(default_factory=asyncio.Event)

    def watch(self, ws: WebSocket) -> None:
        sent: list[dict[str, Any]] = []
        received: list[dict[str, Any]] = []
        self.sent.append(sent)
        self.received.append(received)
        ws.on("framesent", lambda payload: sent.append(json.loads(payload)))

        def on_frame(payload: str | bytes) -> None:
            received.append(json.loads(payload))
            if (
                received[-1]["type"] == "appendCode"
                and len(client_code(received)) > CUT_AFTER_CHARS
            ):
                self.coding.set()

        ws.on("framereceived", on_frame)

    def used(self) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        """The sockets that got through (refused ones never sent a frame)."""
        return [(s, r) for s, r in zip(self.sent, self.received, strict=True) if s]


@asynccontextmanager
async def ui(browser: Browser, url: str) -> AsyncIterator[tuple[Page, Sockets]]:
    sockets = Sockets()
    errors: list[str] = []
    async with local_page(browser, url) as page:
        page.on("websocket", sockets.watch)
        page.on("pageerror", lambda error: errors.append(f"{error.message}\n{error.stack}"))
        await load_ui(page, url + "/")
        yield page, sockets
        assert [e for e in errors if url in e] == [], "the UI's own modules threw"


@asynccontextmanager
async def behind_proxy(tmp_path: Path) -> AsyncIterator[tuple[Suite, CuttableProxy, str]]:
    """A paced demo suite, and the URL of a proxy to its gateway that the test can cut."""
    async with running_suite(tmp_path, agent=AgentSettings(demo_pace_s=DEMO_PACE_S)) as suite:
        proxy = CuttableProxy(suite.gateway_port)
        await proxy.start()
        try:
            yield suite, proxy, f"http://127.0.0.1:{proxy.port}"
        finally:
            await proxy.close()


async def generate_then_cut(page: Page, sockets: Sockets, proxy: CuttableProxy) -> None:
    """Start a generation and cut the network once it streams code."""
    await generate(page)
    await sockets.coding.wait()
    proxy.cut()


async def generate(page: Page) -> None:
    await page.get_by_test_id("prompt-input").fill("A landing page for a bakery")
    await page.get_by_test_id("stack-select").select_option("html_css")
    await page.get_by_test_id("generate-button").click()


async def settled_page(page: Page) -> list[dict[str, Any]]:
    """What the user sees once both variants are done, minus timings and random ids."""
    for i in range(2):
        await expect(page.get_by_test_id(f"variant-{i}-status")).to_have_attribute(
            "data-state", "complete", timeout=GENERATION_TIMEOUT_MS
        )
    await expect(page.get_by_test_id("run-status")).to_have_attribute("data-state", "done")
    for i in range(2):
        await (
            page.get_by_test_id(f"variant-{i}")
            .get_by_role("button", name="Code", exact=True)
            .click()
        )
        await expect(page.get_by_test_id(f"variant-{i}-code")).to_contain_text("</html>")
    snapshot: list[dict[str, Any]] = await page.evaluate(
        """() => [0, 1].map((i) => {
            const byId = (id) => document.querySelector(`[data-testid="${id}"]`);
            const text = (el, selector) => el.querySelector(selector)?.textContent ?? null;
            return {
              code: byId(`variant-${i}-code`).textContent,
              model: byId(`variant-${i}-model`).textContent,
              steps: [...byId(`activity-${i}`).children].map((li) => ({
                kind: li.dataset.kind,
                tool: li.dataset.tool ?? null,
                state: li.dataset.state ?? null,
                prose: text(li, ".bubble") ?? text(li, ".step-body"),
                input: text(li, '[data-testid="tool-input"]'),
                output: text(li, '[data-testid="tool-output"]'),
              })),
            };
          })"""
    )
    return snapshot


def seqs(frames: list[dict[str, Any]]) -> list[int]:
    return [f["seq"] for f in frames if "seq" in f]


async def test_a_dropped_connection_reattaches_and_loses_nothing(
    tmp_path: Path, browser: Browser
) -> None:
    async with behind_proxy(tmp_path) as (suite, proxy, url):
        async with ui(browser, url) as (page, sockets):
            await generate(page)
            undisturbed = await settled_page(page)
            assert len(sockets.used()) == 1

        async with ui(browser, url) as (page, sockets):
            await generate_then_cut(page, sockets, proxy)
            runbar = page.get_by_test_id("run-status")
            await expect(runbar).to_have_attribute("data-state", "reconnecting")
            await expect(runbar).to_contain_text("reconnecting")
            await proxy.refused.wait()  # the UI tried again while the network was down
            proxy.heal()
            await expect(runbar).to_have_attribute("data-state", "running")
            dropped_then_resumed = await settled_page(page)
            [(params, first), (resume, second)] = sockets.used()
        [create, dropped] = suite.agent.manager.generations()

    assert dropped_then_resumed == undisturbed
    # Each tool once per variant, as in the undisturbed run.
    for variant in dropped_then_resumed:
        tools = [s["tool"] for s in variant["steps"] if s["kind"] == "tool"]
        assert tools == ["create_file", "edit_file"]
    # The drop landed mid-generation: before any variant ended.
    assert not [f for f in first if f["type"] in ("variantComplete", "variantError")]
    [params_frame] = params
    assert (params_frame["resumable"], params_frame["codeStream"]) == (True, "append")
    assert params_frame["scoreFidelity"] is True
    assert first[0] == {"type": "generation", "value": dropped.id}
    assert resume == [
        {
            "resumeGenerationId": dropped.id,
            "afterSequence": max(seqs(first)),
            "codeStream": "append",
            "scoreFidelity": True,
        }
    ]
    # First each variant's code, whole and at least what the page held (no flash back to
    # an older snapshot); then only what came after the last sequence seen, each once.
    after = max(seqs(first))
    resent = list(takewhile(lambda f: f["type"] == "setCode" and f.get("seq", 0) <= after, second))
    held = {f["variantIndex"] for f in first if f["type"] == "appendCode"}
    assert 0 in held
    assert held <= {f["variantIndex"] for f in resent}
    for f in resent:
        assert f["value"].startswith(client_code(first, f["variantIndex"]))
    assert min(seqs(second[len(resent) :])) > after
    events = [json.dumps(f, sort_keys=True) for f in first + second if "seq" in f]
    assert len(set(events)) == len(events)
    assert second[-1]["type"] == "variantComplete"
    assert (create.status, dropped.status) == ("completed", "completed")


async def test_a_generation_cancelled_while_disconnected_ends_as_cancelled(
    tmp_path: Path, browser: Browser
) -> None:
    async with behind_proxy(tmp_path) as (suite, proxy, url):
        async with ui(browser, url) as (page, sockets):
            await generate_then_cut(page, sockets, proxy)
            await proxy.refused.wait()
            # Cancelled elsewhere (another client, the API) while this page is away.
            [generation] = suite.agent.manager.generations()
            async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
                await pb_grpc.AgentServiceStub(channel).CancelGeneration(
                    pb.CancelGenerationRequest(generation_id=generation.id)
                )
            assert generation.task is not None
            await asyncio.wait({generation.task})
            proxy.heal()

            # The re-attached stream says how it ended: cancelled, not failed or done.
            runbar = page.get_by_test_id("run-status")
            await expect(runbar).to_have_attribute("data-state", "cancelled")
            await expect(
                page.get_by_test_id("toast").filter(has_text="The generation was cancelled.")
            ).to_be_visible()
            for i in range(2):
                await expect(page.get_by_test_id(f"variant-{i}-message")).to_contain_text(
                    "cancelled"
                )
            await expect(page.get_by_test_id("generate-button")).to_be_enabled()
            [_, (resume, _)] = sockets.used()
    assert generation.status == "cancelled"
    assert resume[0]["resumeGenerationId"] == generation.id
