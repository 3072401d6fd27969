"""A react_vite generation end to end: a scripted model, real esbuild, Tailwind, Chromium.

The model writes the three-component app of tests/react/app.py over several turns, with
an unknown import and a syntax error on the way. The preview must show the built page at
least three times while the files come, the model must get each build error with its
file and line, and the final page must render styled with no network and score >= 0.9
against a screenshot of itself. An upstream-protocol client (the WS gateway, four
options) must get the built page as each option's code.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import re
import zipfile
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
import pytest_asyncio
from PIL import Image, ImageChops
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.agent.settings import AgentSettings
from services.common.react_project import BUILT_PATH
from services.common.tool_types import FileState
from services.common.vendor import DEFAULT_VENDOR_DIR
from services.tools.preview_tool import inline_project
from services.tools.screenshot import Screenshotter
from services.tools.settings import ToolsSettings
from tests.browser.pages import CHROMIUM
from tests.fakes.openai_server import FakeOpenAI, FunctionCall, Pause, Text, chat_turn
from tests.react.app import (
    FOOTER_TSX,
    HEADER_TSX,
    INDEX_CSS,
    INDEX_HTML,
    MAIN_TSX,
    PRICING_TSX,
    app_tsx,
    project,
)
from tests.suite import Suite, create_params, generation_events, run_ws, running_suite

pytestmark = pytest.mark.asyncio(loop_scope="module")

METRICS = ("block_match", "text", "position", "color", "visual")
UNKNOWN_IMPORT = (
    FOOTER_TSX.replace(
        "export const Footer", 'import { motion } from "framer-motion";\n\nexport const Footer'
    )
    .replace("<footer", "<motion.footer")
    .replace("</footer>", "</motion.footer>")
)
UNCLOSED = FOOTER_TSX.replace("</footer>", "")
# A model that answers in text only (no tool calls): it cannot write a project.
TEXT_ONLY_MODEL = """\
[[endpoint]]
name = "ollama"
base_url = "http://127.0.0.1:9/v1"
[[endpoint.model]]
id = "gemma3:1b"
vision = false
tools = false
"""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def suite(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAI) -> AsyncIterator[Suite]:
    models = tmp_path_factory.mktemp("models") / "models.toml"
    models.write_text(TEXT_ONLY_MODEL)
    agent = replace(
        AgentSettings.from_env({"S2C_MODELS_FILE": str(models)}),
        demo_pace_s=0.0,
        provider_max_retries=0,
        pinned_models=("local:tiny",),
        local_models=("tiny",),
        local_base_url=fake.base_url,
        preview_replay_s=0.0,
    )
    tools = ToolsSettings(screenshots_enabled=True, chromium_path=CHROMIUM)
    async with running_suite(tmp_path_factory.mktemp("react"), agent=agent, tools=tools) as s:
        yield s


def shooter(suite: Suite) -> Screenshotter:
    screenshotter = suite.tools.worker.screenshotter
    assert screenshotter is not None
    return screenshotter


async def render(suite: Suite, html: str) -> Image.Image:
    png, _ = await shooter(suite).render_for_score(html, 1000, 700, "() => 0", timeout_s=30)
    return Image.open(io.BytesIO(png)).convert("RGB")


def create(call_id: str, path: str, content: str) -> FunctionCall:
    return FunctionCall(call_id, "create_file", json.dumps({"path": path, "content": content}))


def tool_answer(fake: FakeOpenAI, call_id: str) -> dict[str, Any]:
    """The create_file result the model got back for `call_id`."""
    for request in fake.requests:
        for message in request.json["messages"]:
            if message.get("tool_call_id") == call_id:
                answer: dict[str, Any] = json.loads(message["content"])
                return answer
    raise AssertionError(f"no answer to {call_id}")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def screenshot(suite: Suite) -> tuple[str, str]:
    """The final app's page built directly, and its render as a PNG data URL."""
    final = await suite.tools.worker.builder.build(project())
    assert final.html is not None
    buffer = io.BytesIO()
    (await render(suite, final.html)).save(buffer, format="PNG")
    return final.html, "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def generated(
    suite: Suite, fake: FakeOpenAI, screenshot: tuple[str, str]
) -> list[pb.GenerationEvent]:
    """One option written over five turns, asked to match the screenshot."""
    fake.add_chat(
        chat_turn(
            [
                create("c1", "index.html", INDEX_HTML),
                create("c2", "src/index.css", INDEX_CSS),
                create("c3", "src/components/Header.tsx", HEADER_TSX),
                create("c4", "src/App.tsx", app_tsx()),
                create("c5", "src/main.tsx", MAIN_TSX),
            ]
        ),
        chat_turn(
            [
                create("c6", "src/components/Pricing.tsx", PRICING_TSX),
                create("c7", "src/App.tsx", app_tsx("Pricing")),
            ]
        ),
        chat_turn(
            [
                create("c8", "src/App.tsx", app_tsx("Pricing", "Footer")),
                create("c9", "src/components/Footer.tsx", UNKNOWN_IMPORT),
            ]
        ),
        chat_turn([create("c10", "src/components/Footer.tsx", UNCLOSED)]),
        chat_turn([create("c11", "src/components/Footer.tsx", FOOTER_TSX)]),
        chat_turn([Text(["Built the pricing page."])]),
    )
    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_CREATE,
        input_mode=pb.INPUT_MODE_IMAGE,
        stack=pb.STACK_REACT_VITE,
        variant_count=1,
        score_fidelity=True,
    )
    request.prompt.images.append(screenshot[1])
    return await generation_events(suite.agent.port, request)


def pages(events: list[pb.GenerationEvent]) -> list[str]:
    """Each built page the option showed, in order."""
    return [
        e.code_snapshot.content
        for e in events
        if e.HasField("code_snapshot") and e.code_snapshot.path == BUILT_PATH
    ]


async def test_the_preview_follows_the_build_as_the_files_come(
    generated: list[pb.GenerationEvent], screenshot: tuple[str, str]
) -> None:
    assert generated[-1].HasField("generation_complete")
    shown = list(dict.fromkeys(pages(generated)))
    # Header alone, with the pricing cards, then with the footer: three pages at least.
    assert len(shown) >= 3, len(shown)
    # As sent, the page has no trailing newline (the agent's clean_text).
    assert shown[-1] == screenshot[0].rstrip()
    assert not re.search(r"<script[^>]*\bsrc=|<link[^>]*stylesheet", shown[-1])
    # Until the fix the preview kept the last good page: none had the footer.
    assert all("Made with care" not in page for page in shown[:-1])
    # The option's code is the built page; the sources are its other files.
    snapshots = [e.code_snapshot for e in generated if e.HasField("code_snapshot")]
    assert {s.path: s.content for s in snapshots}["src/components/Footer.tsx"] == FOOTER_TSX
    assert snapshots[-1].path == BUILT_PATH


async def test_build_errors_reach_the_model_with_file_and_line(
    generated: list[pb.GenerationEvent], fake: FakeOpenAI
) -> None:
    missing = tool_answer(fake, "c8")["build"]
    assert missing["errors"][0].startswith("src/App.tsx:3:"), missing
    assert 'cannot find "@/components/Footer"' in missing["errors"][0]
    unknown = tool_answer(fake, "c9")["build"]
    assert unknown["ok"] is False
    assert unknown["errors"][0].startswith("src/components/Footer.tsx:1:"), unknown
    assert '"framer-motion" is not available' in unknown["errors"][0]
    unclosed = tool_answer(fake, "c10")["build"]
    assert unclosed["ok"] is False
    assert any(e.startswith("src/components/Footer.tsx:") for e in unclosed["errors"])
    assert tool_answer(fake, "c11")["build"]["ok"] is True


async def test_the_final_page_renders_styled_and_scores_against_itself(
    suite: Suite, generated: list[pb.GenerationEvent]
) -> None:
    page = await render(suite, pages(generated)[-1])
    assert page.getpixel((500, 10)) == (15, 23, 42)  # bg-slate-900: the header
    [fidelity] = [e.fidelity for e in generated if e.HasField("fidelity")]
    assert fidelity.unavailable_reason == ""
    for metric in METRICS:
        assert getattr(fidelity, metric) >= 0.9, (metric, fidelity)


async def test_an_upstream_client_gets_the_built_page_as_its_code(
    suite: Suite, fake: FakeOpenAI, screenshot: tuple[str, str]
) -> None:
    # Every option (the gateway asks for four) writes the app in one turn.
    files = project()
    order = [p for p in files if p not in ("index.html", "src/main.tsx")]
    calls = [create(f"w{i}", path, files[path]) for i, path in enumerate(order)]
    calls += [create("w8", "index.html", INDEX_HTML), create("w9", "src/main.tsx", MAIN_TSX)]
    fake.script_chat(chat_turn(calls), chat_turn([Text(["Done."])]))
    params = create_params(generatedCodeConfig="react_vite", inputMode="text")
    params["prompt"] = {"text": "A pricing page", "images": [], "videos": []}
    result = await run_ws(suite.ws_url, params)
    assert result.close_code == 1000, result.frames[-3:]
    variants = {f["variantIndex"] for f in result.of("setCode")}
    assert len(variants) == 4
    for v in variants:
        assert result.last_code(v) == screenshot[0].rstrip()
        sources = {f["path"]: f["value"] for f in result.of("setFile", v)}
        assert sources["src/App.tsx"] == files["src/App.tsx"]


async def test_the_preview_rebuilds_while_the_files_stream(
    suite: Suite, fake: FakeOpenAI, screenshot: tuple[str, str]
) -> None:
    # The turn holds after its last file: no tool has run, yet the page must show.
    files = project()
    order = [p for p in files if p != "src/main.tsx"] + ["src/main.tsx"]
    calls = [create(f"s{i}", path, files[path]) for i, path in enumerate(order)]
    fake.add_chat(chat_turn([*calls, Pause()]), chat_turn([Text(["Done."])]))
    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_CREATE,
        input_mode=pb.INPUT_MODE_TEXT,
        stack=pb.STACK_REACT_VITE,
        variant_count=1,
    )
    request.prompt.text = "A pricing page"
    live: list[str] = []
    async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        async for message in stub.GenerateCode(request):
            for event in message.events:
                if event.HasField("tool_result"):
                    assert live, "a tool ran before the live page showed"
                snapshot = event.code_snapshot
                if event.HasField("code_snapshot") and snapshot.path == BUILT_PATH and not live:
                    live.append(snapshot.content)
                    fake.release()
    # The same page as the tools' build (theirs has index.html's trailing newline trimmed).
    assert [page.rstrip() for page in live] == [screenshot[0].rstrip()]


async def test_the_export_builds_offline_with_vite_to_the_same_page(
    suite: Suite, generated: list[pb.GenerationEvent], tmp_path: Path
) -> None:
    snapshots = (e.code_snapshot for e in generated if e.HasField("code_snapshot"))
    files = {s.path: s.content for s in snapshots}
    async with aiohttp.ClientSession() as session:
        body = {"files": files, "stack": "react_vite"}
        async with session.post(f"{suite.http_url}/api/export", json=body) as response:
            assert response.status == 200, await response.text()
            archive = await response.read()
    with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
        zipped.extractall(tmp_path)
    package = json.loads((tmp_path / "package.json").read_text())
    pins = json.loads((DEFAULT_VENDOR_DIR / "package.json").read_text())["dependencies"]
    assert package["dependencies"]["react"] == pins["react"]
    assert package["devDependencies"]["vite"] == pins["vite"]
    assert (tmp_path / "dist/index.html").read_text() == files[BUILT_PATH]
    assert (tmp_path / "src/components/Footer.tsx").read_text() == FOOTER_TSX
    # Offline: the vendored packages stand in for `npm install`.
    (tmp_path / "node_modules").symlink_to(DEFAULT_VENDOR_DIR / "node_modules")
    vite = await asyncio.create_subprocess_exec(
        "node",
        "node_modules/vite/bin/vite.js",
        "build",
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "NO_COLOR": "1"},
    )
    output, _ = await vite.communicate()
    assert vite.returncode == 0, output.decode()[-2000:]
    built = tmp_path / "dist"
    page = FileState("dist/index.html", (built / "index.html").read_text())
    assets = tuple(
        FileState(f"dist/{p.relative_to(built).as_posix()}", p.read_text())
        for p in built.rglob("*")
        if p.suffix in (".js", ".css")
    )
    vite_page = inline_project(page, assets)
    ours, theirs = await render(suite, files[BUILT_PATH]), await render(suite, vite_page)
    assert ours.size == theirs.size
    differ = ImageChops.difference(ours, theirs).convert("L").point(lambda v: 255 if v else 0)
    assert differ.histogram()[255] <= ours.width * ours.height // 1000, "renders differ"


async def test_a_model_without_tools_is_refused_on_the_stack(suite: Suite) -> None:
    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_CREATE,
        input_mode=pb.INPUT_MODE_TEXT,
        stack=pb.STACK_REACT_VITE,
        variant_count=1,
        models=["ollama:gemma3:1b"],
    )
    request.prompt.text = "A pricing page"
    events = await generation_events(suite.agent.port, request)
    [error] = [e.variant_error for e in events if e.HasField("variant_error")]
    assert "needs a model that calls tools" in error.message, error
