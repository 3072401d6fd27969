"""Issue 35's attacks on scoring and the workers' browser (items 3-6), replayed.

The score's stopping and OCR run in process, where cancelling one is deterministic: the
cancellation returns only once the work has stopped, so what is alive afterwards is what
a limit leaves behind. The browser's places and the render budget are replayed against
the real gateway, agent and tool worker servers (in this process: their start is most of
this module's time) and the worker's Chromium: two owners' pages wait on a stylesheet that
never answers while a bystander's generation previews its pages.
"""

from __future__ import annotations

import asyncio
import io
import os
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
import pytest_asyncio
from aiohttp import web
from PIL import Image, ImageDraw
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc
from s2c.common.v1 import common_pb2
from s2c.tools.v1 import tool_service_pb2 as tpb
from s2c.tools.v1 import tool_service_pb2_grpc as tpb_grpc

from services.agent.settings import AgentSettings
from services.common.errors import bad_request_violations
from services.common.images import ImageDecoder, ImageLimits
from services.common.input_images import parse_input_image
from services.common.tool_types import OWNER_METADATA
from services.fidelity.lines import Word
from services.fidelity.metrics import Block, PageBlocks
from services.fidelity.ocr import OcrPage
from services.fidelity.score import score_png
from services.fidelity.stop import Stop, Stopped
from services.tools.fidelity import FidelityScorer
from services.tools.settings import ToolsSettings
from services.tools.slots import FairSlots
from tests.attacks import data_url, demo_previews
from tests.browser.pages import CHROMIUM
from tests.suite import Suite, create_params, generation_refusal, run_ws, running_suite

pytestmark = pytest.mark.asyncio(loop_scope="module")


def dense_png(width: int = 1280, height: int = 1600) -> bytes:
    """A screenshot full of short words: seconds of Tesseract."""
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    for row in range(height // 18):
        for col in range(width // 110):
            draw.text((8 + col * 110, row * 18), f"word{row}x{col}", fill="black")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def tesseract_children() -> list[int]:
    """This process's tesseract children that have not been reaped."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if name == "tesseract" and ppid == os.getpid():
            found.append(int(entry.name))
    return found


# -- items 3 and 4: a score stops at its limit, its OCR with it -------------------------


async def test_a_cancelled_score_leaves_no_tesseract_running() -> None:
    scorer = FidelityScorer(None, ImageDecoder(ImageLimits()))
    image = parse_input_image(data_url(dense_png(), "image/png"))
    score = asyncio.create_task(
        scorer.score("<p>hi</p>", image, image_index=0, width=0, timeout_s=60)
    )
    while not tesseract_children():  # the OCR has started
        assert not score.done(), score
        await asyncio.sleep(0.02)

    score.cancel()
    with pytest.raises(asyncio.CancelledError):
        await score

    # Before issue 35 the cancellation returned at once, the slot was free, and
    # Tesseract ran on to its own 20 s limit.
    assert tesseract_children() == []


async def test_a_stopped_match_ends_at_once_rather_than_running_on() -> None:
    words = [f"block{i} with some words" for i in range(2000)]
    page = PageBlocks(
        tuple(Block(w, 10, 20 * i, 200, 16, (0, 0, 0)) for i, w in enumerate(words)), 1280, 40000
    )
    page_words = [Word(w, 10, 20 * i, 200, 16, (0, 0, 0)) for i, w in enumerate(words)]
    png = io.BytesIO()
    Image.new("RGB", (1280, 1200), "white").save(png, format="PNG")
    stop = Stop()
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            score_png(OcrPage(page, ()), png.getvalue(), page_words, png.getvalue(), stop=stop)
            outcome.append(None)
        except Stopped as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    stop.set()  # the score's caller gives up (its limit, or a cancellation)
    worker.join()

    [ended] = outcome
    assert isinstance(ended, Stopped)


async def test_the_match_is_bounded_in_blocks_and_the_score_says_so() -> None:
    blocks = tuple(Block(f"line {i}", 10, 20 * i, 200, 16, (0, 0, 0)) for i in range(450))
    words = [Word(f"other{i}", 10, 20 * i, 100, 16, (0, 0, 0)) for i in range(30)]
    png = io.BytesIO()
    Image.new("RGB", (1280, 1200), "white").save(png, format="PNG")

    result = score_png(
        OcrPage(PageBlocks(blocks, 1280, 9000), ()), png.getvalue(), words, png.getvalue()
    )

    assert len(result.reference.blocks) == 400
    assert result.note.startswith("matched only the first 400 of the 450 text blocks of the ")
    assert "S2C_FIDELITY_MAX_BLOCKS" in result.note


# -- item 5: the browser's places, fairly ------------------------------------------------


async def test_a_freed_place_goes_to_the_owner_holding_the_fewest() -> None:
    slots = FairSlots(total=2, per_owner=2)
    order: list[str] = []
    entered = asyncio.Event()
    release = {name: asyncio.Event() for name in ("a1", "a2", "a3", "b1")}

    async def hold(owner: str, name: str) -> None:
        async with slots.hold(owner):
            order.append(name)
            entered.set()
            await release[name].wait()

    async def entries(count: int) -> None:
        while len(order) < count:
            entered.clear()
            await entered.wait()

    held = [asyncio.create_task(hold("a", n)) for n in ("a1", "a2")]
    await entries(2)
    late = [asyncio.create_task(hold("a", "a3")), asyncio.create_task(hold("b", "b1"))]
    await asyncio.wait(late, timeout=0)  # both start, and queue: every place is taken
    assert slots.waiting == 2

    release["a1"].set()  # a's third came first, but b holds none
    await entries(3)
    for event in release.values():
        event.set()
    await asyncio.gather(*held, *late)

    assert order == ["a1", "a2", "b1", "a3"]


async def test_one_owner_cannot_take_every_place_and_a_cancelled_wait_frees_nothing() -> None:
    slots = FairSlots(total=3, per_owner=2)
    async with slots.hold("a"), slots.hold("a"):
        waiting = asyncio.create_task(slots.hold("a").__aenter__())
        await asyncio.wait({waiting}, timeout=0)  # it starts, and queues
        assert slots.waiting == 1
        async with slots.hold("b"):  # the third place is b's though a asked first
            assert (slots.held("a"), slots.held("b")) == (2, 1)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert (slots.held("a"), slots.waiting) == (2, 0)
    assert slots.held("a") == 0


# -- real processes: a client's hanging pages, and the render budget ---------------------


@dataclass
class Stack:
    suite: Suite
    arrived: asyncio.Event  # set once both attackers' pages wait on the stylesheet
    requests: list[str]


HANGING = (
    '<!doctype html><html><head><link rel="stylesheet" href="http://hang.test/{n}.css">'
    "</head><body><p>attacker {n}</p></body></html>"
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    arrived, requests, never = asyncio.Event(), [], asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        requests.append(request.path)
        if {"/1.css", "/2.css"} <= set(requests):
            arrived.set()
        await never.wait()
        raise AssertionError("never answered")

    app = web.Application()
    app.router.add_get("/{name}", hang)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    tools = ToolsSettings(
        chromium_path=CHROMIUM,
        test_egress_routes={"hang.test": ("127.0.0.1", runner.addresses[0][1])},
    )
    agent = AgentSettings(demo_pace_s=0.0, preview_replay_s=0.0, fidelity_timeout_s=0.0)
    try:
        async with running_suite(tmp_path_factory.mktemp("round4"), agent=agent, tools=tools) as s:
            yield Stack(s, arrived, requests)
    finally:
        never.set()
        await runner.cleanup()


async def _attack(stub: tpb_grpc.ToolServiceAsyncStub, n: int) -> tpb.ExecuteToolResponse:
    """A preview of a page whose stylesheet never answers, for owner `attacker-n`."""
    request = tpb.ExecuteToolRequest(
        call=tpb.ToolCall(id=f"attack-{n}", name="screenshot_preview"),
        file=common_pb2.FileState(path="index.html", content=HANGING.format(n=n)),
    )
    return await stub.ExecuteTool(
        request, timeout=60, metadata=((OWNER_METADATA, f"attacker-{n}"),)
    )


async def test_a_bystander_previews_while_two_owners_pages_hang(stack: Stack) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{stack.suite.tools.port}") as tools:
        attacks = [asyncio.create_task(_attack(tpb_grpc.ToolServiceStub(tools), n)) for n in (1, 2)]
        await stack.arrived.wait()  # both hold a place in the workers' browser now
        # Hanging when the bystander starts; how long they hang after that (their load
        # budget) is a race with the bystander's own time on a loaded machine.
        still_hanging = [not attack.done() for attack in attacks]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{stack.suite.agent.port}") as agent:
            previews = await demo_previews(pb_grpc.AgentServiceStub(agent), 1)
        for attack in attacks:
            attack.cancel()
        await asyncio.gather(*attacks, return_exceptions=True)

    assert still_hanging == [True, True]
    # Before issue 35 both places were the attackers' and both previews failed.
    assert sorted(previews) == [(0, True), (1, True)]


async def test_twenty_tagged_widths_are_refused_naming_the_render_budget(stack: Stack) -> None:
    image = data_url(dense_png(64, 48), "image/png")
    # Two pages, each at its ten widths: every page of an option is captured at all 20.
    meta = [{"viewportWidth": 240 + i * 180, "page": ("index", "about")[i % 2]} for i in range(20)]
    params = create_params(prompt={"text": "", "images": [image] * 20, "imageMeta": meta})

    result = await run_ws(stack.suite.ws_url, params)

    assert result.close_code == 4332
    [error] = result.of("error")
    assert error["value"] == (
        "Invalid request: prompt.image_meta: 20 widths × 2 pages × 4 options is 160 renders "
        "per round of previews; at most 96 (S2C_MAX_RENDERS): tag fewer widths or pages, "
        "or ask for fewer options"
    )
    assert not result.of("setCode")


async def test_eight_options_over_grpc_are_refused_with_a_field_violation(stack: Stack) -> None:
    image = data_url(dense_png(64, 48), "image/png")
    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_CREATE,
        input_mode=pb.INPUT_MODE_IMAGE,
        prompt=pb.Prompt(
            images=[image] * 20,
            image_meta=[pb.ImageMeta(viewport_width=240 + i * 180) for i in range(20)],
        ),
        variant_count=8,
    )

    refused = await generation_refusal(stack.suite.agent.port, request)

    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    [violation] = bad_request_violations(refused)
    assert violation.field == "prompt.image_meta"
    assert violation.description.startswith("20 widths × 1 page × 8 options is 160 renders")
