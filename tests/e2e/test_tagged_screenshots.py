"""Tagged screenshots through the whole suite, with a real SDK against a fake Anthropic:
one page at three widths (a responsive page, previewed at those widths), and three pages
(a linked site of three files, kept, returned, updated one page at a time, exported)."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc
from s2c.common.v1 import common_pb2

from services.agent.models import OPUS_MED
from services.agent.settings import AgentSettings
from services.common.credentials import Credentials, Endpoint
from services.tools.settings import ToolsSettings
from tests.fakes.anthropic_server import FakeAnthropic, Text, ToolUse, Turn
from tests.suite import create_params, png_data_url, run_ws, running_suite


def _settings(fake: FakeAnthropic) -> AgentSettings:
    return AgentSettings(
        provider_max_retries=0,
        credentials=Credentials.of(anthropic=Endpoint("sk-ant-test", fake.base_url)),
        refine_rounds=0,  # the scripted turns write no refinement round (test_refine.py)
    )


def _page(title: str, links: str = "") -> str:
    return f"<!DOCTYPE html><html><body><h1>{title}</h1>{links}</body></html>"


async def _generate(
    stub: pb_grpc.AgentServiceAsyncStub, request: pb.GenerateCodeRequest
) -> list[pb.GenerationEvent]:
    return [e async for message in stub.GenerateCode(request) for e in message.events]


def _user_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return " ".join(part.get("text", "") for part in content if part.get("type") == "text")


async def test_one_page_at_three_widths(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    fake = fake_anthropic
    page = _page("Responsive").replace("<h1>", '<h1 style="font-size:5vw">')
    fake.add_turn(ToolUse.of("t1", "create_file", {"path": "index.html", "content": page}))
    fake.add_turn(ToolUse.of("t2", "screenshot_preview", {}))
    fake.add_turn(Text.of("Done."))
    widths = (1280, 768, 390)
    request = pb.GenerateCodeRequest(
        input_mode=pb.INPUT_MODE_IMAGE,
        prompt=pb.Prompt(
            images=[png_data_url(w // 10, 40) for w in widths],
            image_meta=[pb.ImageMeta(viewport_width=w) for w in widths],
        ),
        models=[OPUS_MED],
        variant_count=1,
    )
    tools = ToolsSettings(screenshots_enabled=True)
    async with (
        running_suite(tmp_path, agent=_settings(fake), tools=tools) as suite,
        grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel,
    ):
        stub = pb_grpc.AgentServiceStub(channel)
        events = await _generate(stub, request)
        record = (
            await stub.GetGeneration(pb.GetGenerationRequest(generation_id=events[0].generation_id))
        ).generation
    assert events[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
    prompt = _user_text(fake.requests[0].body)
    assert "one page at 3 viewport widths (1280 px, 768 px, 390 px)" in prompt
    assert "Screenshot 1 at 1280 px, Screenshot 2 at 768 px, Screenshot 3 at 390 px" in prompt
    # One file: the page, at every width.
    assert [(f.path, f.content) for f in record.variants[0].files] == [("index.html", page)]
    assert {e.code_snapshot.path for e in events if e.HasField("code_snapshot")} == {"index.html"}
    shots = next(e.tool_result for e in events if e.tool_result.name == "screenshot_preview")
    assert shots.ok
    captured = shots.output.fields["screenshots"].list_value.values
    assert [s.struct_value.fields["viewport"].string_value for s in captured] == [
        "1280px",
        "768px",
        "390px",
    ]
    # The model sees the three captures, named by their widths.
    result = fake.requests[2].body["messages"][-1]["content"]
    images = [part for block in result for part in _parts(block) if part.get("type") == "image"]
    # Each capture really is that wide (a PNG's width: bytes 16-20 of its header).
    pngs = [base64.b64decode(part["source"]["data"]) for part in images]
    assert [int.from_bytes(png[16:20], "big") for png in pngs] == list(widths)
    assert "1280 px, 768 px, 390 px wide" in json.dumps(result)


def _parts(block: dict[str, Any]) -> list[dict[str, Any]]:
    inner = block.get("content")
    return [block, *(inner if isinstance(inner, list) else [])]


NAV = '<nav><a href="index.html">Home</a><a href="pricing.html">Pricing</a><a href="about.html">About</a></nav>'  # noqa: E501
SITE = {
    "index.html": _page("Home", NAV),
    "pricing.html": _page("Pricing", NAV),
    "about.html": _page("About", NAV),
}


async def test_three_pages_make_a_linked_site(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake = fake_anthropic
    for number, (path, content) in enumerate(SITE.items()):
        fake.add_turn(ToolUse.of(f"c{number}", "create_file", {"path": path, "content": content}))
    fake.add_turn(Text.of("Three pages."))
    # The update: one edit, of pricing.html only.
    fake.add_turn(
        ToolUse.of(
            "u1",
            "edit_file",
            {"path": "pricing.html", "old_text": "Pricing</h1>", "new_text": "Plans</h1>"},
        )
    )
    fake.add_turn(Text.of("Renamed."))
    request = pb.GenerateCodeRequest(
        input_mode=pb.INPUT_MODE_IMAGE,
        prompt=pb.Prompt(
            images=[png_data_url(color=c) for c in ("#111111", "#222222", "#333333")],
            image_meta=[pb.ImageMeta(page=p) for p in ("index", "pricing", "about")],
        ),
        models=[OPUS_MED],
        variant_count=1,
    )
    async with (
        running_suite(tmp_path, agent=_settings(fake)) as suite,
        grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel,
    ):
        stub = pb_grpc.AgentServiceStub(channel)
        events = await _generate(stub, request)
        generation_id = events[0].generation_id
        record = (
            await stub.GetGeneration(pb.GetGenerationRequest(generation_id=generation_id))
        ).generation
        files = {f.path: f.content for f in record.variants[0].files}
        update = pb.GenerateCodeRequest(
            generation_type=pb.GENERATION_TYPE_UPDATE,
            input_mode=pb.INPUT_MODE_IMAGE,
            prompt=pb.Prompt(text="Call the pricing page Plans"),
            files=[common_pb2.FileState(path=p, content=c) for p, c in files.items()],
            models=[OPUS_MED],
            variant_count=1,
        )
        updated_events = await _generate(stub, update)
        updated = (
            await stub.GetGeneration(
                pb.GetGenerationRequest(generation_id=updated_events[0].generation_id)
            )
        ).generation
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"{suite.http_url}/api/export",
                json={"files": {f.path: f.content for f in updated.variants[0].files}},
            ) as response,
        ):
            assert response.status == 200
            archive = zipfile.ZipFile(io.BytesIO(await response.read()))
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"{suite.http_url}/api/export", json={"code": "<p>x</p>", "files": SITE}
            ) as both,
        ):
            assert both.status == 400
    prompt = _user_text(fake.requests[0].body)
    assert "The screenshots show 3 pages of one site" in prompt
    for line in (
        '- index.html: the page "index" (Screenshot 1)',
        '- pricing.html: the page "pricing" (Screenshot 2)',
        '- about.html: the page "about" (Screenshot 3)',
    ):
        assert line in prompt
    # The stream names every file; the record keeps all three, the entry page as `code`.
    streamed = {
        e.code_snapshot.path: e.code_snapshot.content for e in events if e.HasField("code_snapshot")
    }
    assert streamed == SITE
    assert files == SITE
    assert [f.path for f in record.variants[0].files] == list(SITE)
    assert record.variants[0].code == SITE["index.html"]
    # The update changed pricing.html only, and knew the whole project.
    assert updated_events[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
    after = {f.path: f.content for f in updated.variants[0].files}
    assert after == {
        **SITE,
        "pricing.html": SITE["pricing.html"].replace("Pricing</h1>", "Plans</h1>"),
    }
    update_prompt = json.dumps(fake.requests[4].body["messages"])
    assert 'project_file path=\\"about.html\\"' in update_prompt
    changed = [e.code_snapshot.path for e in updated_events if e.HasField("code_snapshot")]
    assert changed[0] == "pricing.html"
    # The export holds the three pages at the zip's root.
    assert sorted(archive.namelist()) == ["about.html", "index.html", "pricing.html"]
    assert archive.read("pricing.html").decode() == after["pricing.html"]


async def test_an_upstream_client_gets_a_sites_entry_page(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    # Every variant of a create (4) and of an update (2) follows one script.
    creates = [
        ToolUse.of(f"c{i}", "create_file", {"path": p, "content": c})
        for i, (p, c) in enumerate(SITE.items())
    ]
    # A path outside the project is refused to the model as a tool error, and writes nothing.
    outside = ToolUse.of("x1", "create_file", {"path": "../up.html", "content": "<p>x</p>"})
    fake_anthropic.every_variant(
        Turn(tuple(creates)), Turn((outside,)), Turn((Text.of("Three pages."),))
    )
    meta = [{"page": p} for p in ("index", "pricing", "about")]
    images = [png_data_url(color=c) for c in ("#111111", "#222222", "#333333")]
    async with running_suite(tmp_path, agent=_settings(fake_anthropic)) as suite:
        created = await run_ws(
            suite.ws_url, create_params(prompt={"text": "", "images": images, "imageMeta": meta})
        )
        refusals = [_tool_result(r.body, "x1") for r in fake_anthropic.requests]
        edit = {"path": "about.html", "old_text": "About</h1>", "new_text": "Team</h1>"}
        fake_anthropic.every_variant(
            Turn((ToolUse.of("u1", "edit_file", edit),)), Turn((Text.of("Renamed."),))
        )
        files = {"index.html": created.last_code(0)} | {
            f["path"]: f["value"] for f in created.of("setFile", 0)
        }
        updated = await run_ws(
            suite.ws_url,
            create_params(
                generationType="update",
                prompt={"text": "Call the about page Team", "images": []},
                history=[{"role": "user", "text": "Call the about page Team"}],
                files=files,
            ),
        )
    # The client knows one file: index.html is its code in every frame, from every variant.
    assert created.close_code == 1000, created.of("error")
    variants = int(created.of("variantCount")[0]["value"])
    assert variants == 4
    for index in range(variants):
        codes = [f["value"] for f in created.of("setCode", index)]
        assert codes
        assert codes[-1] == SITE["index.html"]
        assert all("<h1>Home</h1>" in code for code in codes)
        assert {f["path"]: f["value"] for f in created.of("setFile", index)} == {
            "pricing.html": SITE["pricing.html"],
            "about.html": SITE["about.html"],
        }
        assert created.of("variantComplete", index)
    refused = [r for r in refusals if r is not None]
    assert len(refused) == variants
    assert all(r["is_error"] for r in refused)
    assert all(".. segments are not allowed" in json.dumps(r["content"]) for r in refused)
    # An update given the project as `files` changes about.html only (every file comes
    # once more at the end: the new version holds the whole project); the code stays index.
    assert updated.close_code == 1000, updated.of("error")
    for index in (0, 1):
        assert updated.last_code(index) == SITE["index.html"]
        assert {f["path"]: f["value"] for f in updated.of("setFile", index)} == {
            "pricing.html": SITE["pricing.html"],
            "about.html": SITE["about.html"].replace("About</h1>", "Team</h1>"),
        }


def _tool_result(body: dict[str, Any], call_id: str) -> dict[str, Any] | None:
    """The newest message's tool_result block for `call_id`, if the request carries one."""
    content = body["messages"][-1]["content"]
    blocks = content if isinstance(content, list) else []
    return next(
        (b for b in blocks if b.get("type") == "tool_result" and b["tool_use_id"] == call_id),
        None,
    )
