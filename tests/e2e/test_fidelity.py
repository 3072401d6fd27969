"""Fidelity in the loop over gRPC, with a fake model (docs/fidelity.md).

The screenshot is a small page rendered by the tool worker's own browser. One option of an
image create writes that very page; the other writes a different page and, in the same
turn, calls `compare_with_reference`. The first must score higher on every metric, the
score must follow each option's `variant_complete` and be kept in the run record, and the
model that compared must have received scores, regions and the side-by-side image.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio
from PIL import Image
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc
from s2c.tools.v1 import tool_service_pb2 as tpb
from s2c.tools.v1 import tool_service_pb2_grpc as tpb_grpc

from services.common.input_images import parse_input_image
from services.gateway.access import AccessSettings
from services.gateway.settings import GatewaySettings
from services.tools.screenshot import Screenshotter
from services.tools.settings import ToolsSettings
from services.tools.viewports import Viewport
from tests.browser.pages import CHROMIUM
from tests.eval.test_scores import BLOCKS, Spec, page
from tests.fakes.openai_server import FakeOpenAI, FunctionCall, Text, chat_turn
from tests.suite import Suite, create_params, generation_events, local_model, run_ws, running_suite

pytestmark = pytest.mark.asyncio(loop_scope="module")

METRICS = ("block_match", "text", "position", "color", "visual")
SAME = page(BLOCKS)
# Another page on the same backdrop: other words, other places, other colours.
OTHER = page(
    (
        Spec("Page not found", 300, 200, "#2563eb"),
        Spec("Try the search box above", 300, 400, "#16a34a"),
    )
)
# A page whose script never yields: its render cannot finish.
HANGING = "<!doctype html><html><body><p>Hi</p><script>for (;;) {}</script></body></html>"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def suite(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAI) -> AsyncIterator[Suite]:
    agent = local_model(
        fake.base_url,
        refine_rounds=0,  # scores only: refinement has its own tests (test_refine.py)
    )
    tools = ToolsSettings(screenshots_enabled=True, chromium_path=CHROMIUM)
    # The operator scores every generation (S2C_SCORE_UNASKED): an upstream socket must
    # still close without waiting for the scores.
    gateway = GatewaySettings(
        access=AccessSettings(
            max_concurrent_per_client=0, starts_per_minute=0, max_waiting_per_client=0
        ),
        score_unasked=True,
    )
    data_dir = tmp_path_factory.mktemp("fidelity")
    async with running_suite(data_dir, agent=agent, tools=tools, gateway=gateway) as s:
        yield s


def shooter(suite: Suite) -> Screenshotter:
    screenshotter = suite.tools.worker.screenshotter
    assert screenshotter is not None
    return screenshotter


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def screenshot(suite: Suite) -> str:
    """The page SAME as a user's screenshot of it: a PNG data URL, 1000 px wide."""
    png, _ = await shooter(suite).render_for_score(SAME, 1000, 700, "() => 0", timeout_s=30)
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def tool_answer(fake: FakeOpenAI, call_id: str) -> tuple[list[Any], dict[str, Any]]:
    """The messages of the model's turn after tool call `call_id`, and the tool's answer."""
    followup: list[Any] = next(
        r.json["messages"]
        for r in fake.requests
        if any(m.get("tool_call_id") == call_id for m in r.json["messages"])
    )
    return followup, next(m for m in followup if m.get("tool_call_id") == call_id)


def create(content: str, call_id: str, path: str = "index.html") -> FunctionCall:
    arguments = json.dumps({"path": path, "content": content})
    return FunctionCall(call_id, "create_file", arguments, pieces=2)


def image_create(images: list[str], variant_count: int) -> pb.GenerateCodeRequest:
    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_CREATE,
        input_mode=pb.INPUT_MODE_IMAGE,
        stack=pb.STACK_HTML_CSS,
        variant_count=variant_count,
        score_fidelity=True,  # as our clients ask: unasked, nothing is scored
    )
    request.prompt.images.extend(images)
    return request


async def test_the_page_of_the_screenshot_scores_higher_and_compare_finds_regions(
    suite: Suite, fake: FakeOpenAI, screenshot: str
) -> None:
    compare = FunctionCall("call_2", "compare_with_reference", "{}", pieces=1)
    fake.add_chat(
        chat_turn([create(SAME, "call_1")]),
        chat_turn([create(OTHER, "call_1"), compare]),
        chat_turn([Text(["Built it."])]),
        chat_turn([Text(["Built it."])]),
    )
    request = image_create([screenshot], 2)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        events = [e async for r in stub.GenerateCode(request) for e in r.events]
        record = await stub.GetGeneration(
            pb.GetGenerationRequest(generation_id=events[0].generation_id)
        )
    kinds = [(e.WhichOneof("payload"), e.variant_index) for e in events]
    assert kinds[-1][0] == "generation_complete"
    codes = {
        e.variant_index: e.code_snapshot.content for e in events if e.HasField("code_snapshot")
    }
    scores = {e.variant_index: e.fidelity for e in events if e.HasField("fidelity")}
    same = next(v for v, code in codes.items() if code == SAME)
    other = 1 - same
    assert codes[other] == OTHER
    for v in (same, other):
        # The score follows the option's completion: it never holds it back.
        assert kinds.index(("variant_complete", v)) < kinds.index(("fidelity", v))
        assert scores[v].unavailable_reason == ""
        assert (scores[v].image_index, scores[v].viewport_width) == (0, 1000)
    for metric in METRICS:
        assert getattr(scores[same], metric) > getattr(scores[other], metric), metric
        assert getattr(scores[same], metric) >= 0.9, metric
    kept = {v.variant_index: list(v.fidelity) for v in record.generation.variants}
    assert kept == {same: [scores[same]], other: [scores[other]]}
    # The same renders were checked by axe-core: one check per option (one width, one
    # page), after its score and kept in the record (docs/accessibility.md).
    checks = {e.variant_index: e.accessibility for e in events if e.HasField("accessibility")}
    for v in (same, other):
        assert kinds.index(("fidelity", v)) < kinds.index(("accessibility", v))
        assert checks[v].engine.startswith("axe-core "), checks[v]
        assert (checks[v].viewport_width, checks[v].unavailable_reason) == (1000, "")
        assert checks[v].HasField("score")
        assert checks[v].rules_passed > 0
    assert [k for k, _ in kinds].count("accessibility") == 2
    kept_checks = {v.variant_index: list(v.accessibility) for v in record.generation.variants}
    assert kept_checks == {same: [checks[same]], other: [checks[other]]}

    results = [(e.variant_index, e.tool_result) for e in events if e.HasField("tool_result")]
    assert [(v, r.name, r.ok) for v, r in results if r.name == "compare_with_reference"] == [
        (other, "compare_with_reference", True)
    ]
    # What the model got back on its next turn: the tool's JSON, then the image.
    followup, answer = tool_answer(fake, "call_2")
    details = json.loads(answer["content"])["details"]
    assert set(details["scores"]) == set(METRICS)
    assert details["scores"]["block_match"] < 0.5
    assert "data:image/png;base64," in json.dumps(followup[followup.index(answer) :])
    regions = details["regions"]
    # Every line of the screenshot is absent from the other page: reported missing, boxed.
    missing = {r["expected_text"]: r for r in regions if r["issue"] == "missing"}
    assert "Fresh bread every morning" in missing
    box = missing["Fresh bread every morning"]["box"]
    assert box["width"] > 100
    assert 100 <= box["y"] <= 140


async def test_a_page_that_cannot_render_is_unavailable_with_the_reason(
    suite: Suite, screenshot: str
) -> None:
    image = parse_input_image(screenshot)
    outcome = await suite.tools.worker.fidelity.score(
        HANGING, image, image_index=0, width=0, timeout_s=1.0
    )
    assert outcome.scores is None
    assert outcome.unavailable_reason.startswith("no render:"), outcome
    assert "timed out" in outcome.unavailable_reason
    # The browser is still usable afterwards: the same page scores.
    again = await suite.tools.worker.fidelity.score(
        SAME, image, image_index=0, width=0, timeout_s=30.0
    )
    assert again.scores is not None
    assert again.scores.text is not None
    assert again.scores.text >= 0.9


async def test_bad_input_to_score_fidelity_is_invalid_argument(suite: Suite) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.tools.port}") as channel:
        stub = tpb_grpc.ToolServiceStub(channel)
        for request, field in (
            (tpb.ScoreFidelityRequest(code=SAME, image="data:text/plain,hi"), "image"),
            (tpb.ScoreFidelityRequest(code=" ", image=PNG_1PX), "code"),
            (
                tpb.ScoreFidelityRequest(code=SAME, image=PNG_1PX, viewport_width=50),
                "viewport_width",
            ),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.ScoreFidelity(request, timeout=10)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert field in (caught.value.details() or ""), caught.value.details()


PNG_1PX = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8"
    "z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def retina(png: bytes) -> str:
    """A screenshot taken at twice the pixels of its window, as a data URL."""
    with Image.open(io.BytesIO(png)) as image:
        out = io.BytesIO()
        image.resize((image.width * 2, image.height * 2)).save(out, "PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode("ascii")


async def test_each_screenshot_is_scored_against_its_own_page_at_its_width(
    suite: Suite, fake: FakeOpenAI, screenshot: str
) -> None:
    # The pricing page takes its colours from the site's stylesheet: scored without it,
    # its text would be black, not the screenshot's blue and green.
    linked = OTHER.replace("<html>", '<html><head><link rel="stylesheet" href="site.css"></head>')
    for color, name in (("#2563eb", "b"), ("#16a34a", "g")):
        linked = linked.replace(f';color:{color}"', f'" class="{name}"')
    css = ".b { color: #2563eb } .g { color: #16a34a }"
    png, _ = await shooter(suite).render_for_score(OTHER, 600, 700, "() => 0", timeout_s=30)
    pricing_2x = retina(png)
    about = "data:image/png;base64," + base64.b64encode(png).decode("ascii")

    fake.add_chat(
        chat_turn(
            [
                create(SAME, "call_1"),
                create(css, "call_2", "site.css"),
                create(linked, "call_3", "pricing.html"),
            ]
        ),
        chat_turn([FunctionCall("call_4", "compare_with_reference", "{}", pieces=1)]),
        chat_turn([Text(["Built the site."])]),
    )
    request = image_create([screenshot, pricing_2x, about], 1)
    request.prompt.image_meta.extend(
        [
            pb.ImageMeta(page="index", viewport_width=1000),
            pb.ImageMeta(page="pricing", viewport_width=600),
            pb.ImageMeta(page="about"),
        ]
    )
    events = await generation_events(suite.agent.port, request)
    assert events[-1].HasField("generation_complete")
    scores = [e.fidelity for e in events if e.HasField("fidelity")]
    assert [(s.image_index, s.path, s.viewport_width) for s in scores] == [
        (0, "index.html", 1000),
        (1, "pricing.html", 600),  # the window's width, not the image's 1200 pixels
        (2, "about.html", 0),
    ]
    for score in scores[:2]:
        assert score.unavailable_reason == "", score
        for metric in ("block_match", "text", "position", "color"):
            assert getattr(score, metric) >= 0.9, (score.path, metric)
    # No about page was written: no score, and not the entry page's either.
    assert scores[2].unavailable_reason == "the variant wrote no about.html"
    assert not scores[2].HasField("text")

    # With no image named, the comparison takes the current page's own screenshot.
    _, answer = tool_answer(fake, "call_4")
    details = json.loads(answer["content"])["details"]
    assert (details["image_number"], details["page"], details["viewport_width"]) == (
        2,
        "pricing.html",
        600,
    )
    assert details["scores"]["color"] >= 0.9


async def test_an_upstream_socket_closes_at_its_last_variant_complete(
    suite: Suite, fake: FakeOpenAI, screenshot: str
) -> None:
    # The upstream UI's params: no scoreFidelity, no count (the default four options).
    fake.add_chat(*[chat_turn([create(page, "call_1")]) for page in (SAME, OTHER, SAME, OTHER)])
    fake.add_chat(*[chat_turn([Text(["Built it."])])] * 4)
    prompt = {"text": "", "images": [screenshot], "videos": []}
    result = await run_ws(
        suite.ws_url, create_params(generatedCodeConfig="html_css", prompt=prompt)
    )
    assert result.close_code == 1000
    # Closed right after the last option completed: no score was waited for.
    assert result.frames[-1]["type"] == "variantComplete"
    assert len(result.of("variantComplete")) == 4
    assert result.of("fidelity") == []
    # The operator's scores go on without the socket, into the record, not cancelled.
    generation = max(suite.agent.manager.generations(), key=lambda g: g.started_monotonic)
    assert generation.task is not None
    await generation.task
    assert generation.status == "completed"
    assert all(v.fidelity and v.fidelity[0].unavailable_reason == "" for v in generation.variants)


async def test_our_ui_socket_waits_for_its_scores(
    suite: Suite, fake: FakeOpenAI, screenshot: str
) -> None:
    fake.add_chat(*[chat_turn([create(SAME, "call_1")])] * 4)
    fake.add_chat(*[chat_turn([Text(["Built it."])])] * 4)
    prompt = {"text": "", "images": [screenshot], "videos": []}
    params = create_params(generatedCodeConfig="html_css", prompt=prompt, scoreFidelity=True)
    result = await run_ws(suite.ws_url, params)
    assert result.close_code == 1000
    kinds = [f["type"] for f in result.frames]
    assert kinds.count("variantComplete") == 4
    # The scores, then each option's accessibility check of the same render, then the close.
    assert kinds[-1] == "accessibility"
    assert len(result.of("fidelity")) == 4
    assert len(result.of("accessibility")) == 4
    assert all(f["data"]["engine"].startswith("axe-core") for f in result.of("accessibility"))


LEAVES_STATE = (
    "<p>first</p><script>window.leak = 1; window.name = 'secret';"
    "setInterval(() => { document.body.dataset.tick = 'on' }, 5)</script>"
)
READS_STATE = "() => [typeof window.leak, window.name, document.body.dataset.tick ?? null]"


async def test_a_kept_score_page_carries_nothing_from_one_render_to_the_next(
    suite: Suite,
) -> None:
    browser = shooter(suite)

    async def render(html: str, key: str) -> list[object]:
        _, data = await browser.render_for_score(
            html, 400, 300, READS_STATE, timeout_s=20, keep_for=key
        )
        await browser.warm()  # the page's reset (in the background) is done
        assert isinstance(data, list)
        return data

    async def contexts() -> int:
        # The browser's contexts, less the one this look takes.
        async with browser.fresh_page(Viewport("look", 200, 200)) as page:
            assert page.context.browser is not None
            return len(page.context.browser.contexts) - 1

    first = await render(LEAVES_STATE, "screenshot-a")
    assert first[:2] == ["number", "secret"]
    kept = await contexts()
    second = await render("<p>second</p>", "screenshot-a")
    # The same page, kept (no new context): none of the first render is left in it.
    assert second == ["undefined", "", None]
    assert await contexts() == kept
    assert await render("<p>other</p>", "screenshot-b") == ["undefined", "", None]
