"""generate_images, remove_background and edit_image against the fake Replicate API."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from services.common.credentials import Credentials, Endpoint
from services.tools.asset_store import AssetStore
from services.tools.image_tools import image_tool_handlers, publicly_fetchable
from services.tools.replicate_client import BACKGROUND_REMOVAL_VERSION, ReplicateSettings
from services.tools.types import ToolContext, ToolFlags, ToolHandler, ToolOutcome
from tests.fakes.replicate_server import Fail, FakeReplicate, Hang, Succeed

REQUEST_KEY = "r8_from_the_request"
OPENAI_KEY = "sk-openai-must-never-be-used"
ASSET_BASE = "http://127.0.0.1:7001"
FAST = ReplicateSettings(poll_timeout_s=10.0, first_poll_s=0.001, max_poll_interval_s=0.005)
PNG = b"\x89PNG\r\n\x1a\n" + b"local asset"
DELIVERY = "https://replicate.delivery/xezq/abc/out-0.webp"
GENERATE_PATH = "/v1/models/prunaai/z-image-turbo/predictions"
EDIT_PATH = "/v1/models/prunaai/p-image-edit/predictions"


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeReplicate]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    async with FakeReplicate(token=REQUEST_KEY) as server:
        yield server


@pytest.fixture
def store(tmp_path: Path) -> AssetStore:
    return AssetStore(tmp_path)


@pytest.fixture
def tools(store: AssetStore) -> dict[str, ToolHandler]:
    return image_tool_handlers(store, settings=FAST)


def context(fake: FakeReplicate, *, key: str = REQUEST_KEY, **flags: bool) -> ToolContext:
    creds = Credentials.of(openai=Endpoint(OPENAI_KEY), replicate=Endpoint(key, fake.base_url))
    return ToolContext(flags=ToolFlags(**flags), credentials=creds, asset_base_url=ASSET_BASE)


async def call(
    tools: dict[str, ToolHandler], name: str, args: dict[str, Any], ctx: ToolContext
) -> ToolOutcome:
    return await tools[name](args, None, ctx)


def url_for(fake: FakeReplicate, key: str) -> str:
    """The result URL of the prediction whose prompt (or image) was `key`."""
    for p in fake.predictions.values():
        if key in (p.input.get("prompt"), p.input.get("image")):
            return fake.file_url(p.id)
    raise AssertionError(f"no prediction for {key!r}")


def assert_only_request_key(fake: FakeReplicate) -> None:
    assert fake.requests
    assert {r.authorization for r in fake.requests} == {f"Bearer {REQUEST_KEY}"}
    assert all(OPENAI_KEY not in str(r.headers) for r in fake.requests)


def as_data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


# -- generate_images ------------------------------------------------------------------------


async def test_generate_images_success(fake: FakeReplicate, tools: dict[str, ToolHandler]) -> None:
    outcome = await call(tools, "generate_images", {"prompts": ["a fox", "a hen"]}, context(fake))
    fox, hen = url_for(fake, "a fox"), url_for(fake, "a hen")
    assert outcome.ok
    assert outcome.result == {"images": {"a fox": fox, "a hen": hen}}
    assert outcome.summary == {
        "images": [
            {"prompt": "a fox", "url": fox, "status": "ok"},
            {"prompt": "a hen", "url": hen, "status": "ok"},
        ]
    }
    assert [r.json for r in fake.creations] == [
        {
            "input": {
                "prompt": prompt,
                "width": 1024,
                "height": 1024,
                "go_fast": False,
                "output_format": "png",
                "guidance_scale": 0,
                "num_inference_steps": 8,
            }
        }
        for prompt in ("a fox", "a hen")
    ]
    assert {r.path for r in fake.creations} == {GENERATE_PATH}
    assert_only_request_key(fake)
    # The fake serves on loopback: no model could fetch that, so the bytes travel instead.
    assert [(m.display_name, m.mime_type, m.data, m.url) for m in outcome.media] == [
        ("generated_0.png", "image/png", fake.png, None),
        ("generated_1.png", "image/png", fake.png, None),
    ]


async def test_generate_images_public_results_are_url_parts(
    fake: FakeReplicate, tools: dict[str, ToolHandler]
) -> None:
    fake.default = Succeed(output=[DELIVERY])
    outcome = await call(tools, "generate_images", {"prompts": ["a fox"]}, context(fake))
    assert outcome.result == {"images": {"a fox": DELIVERY}}
    assert [(m.display_name, m.mime_type, m.data, m.url) for m in outcome.media] == [
        ("generated_0.png", "image/webp", None, DELIVERY)
    ]
    assert fake.files_served == []


async def test_generate_images_trims_and_dedupes(
    fake: FakeReplicate, tools: dict[str, ToolHandler]
) -> None:
    args = {"prompts": ["  a fox ", "a fox", "", "   ", 3, None, "a hen"]}
    outcome = await call(tools, "generate_images", args, context(fake))
    assert list(outcome.result["images"]) == ["a fox", "a hen"]
    assert [r.json["input"]["prompt"] for r in fake.creations] == ["a fox", "a hen"]


async def test_generate_images_partial_failure_is_still_ok(
    fake: FakeReplicate, tools: dict[str, ToolHandler]
) -> None:
    fake.script("a hen", Fail("NSFW"))
    args = {"prompts": ["a hen", "a fox"]}
    outcome = await call(tools, "generate_images", args, context(fake))
    fox = url_for(fake, "a fox")
    assert outcome.ok
    assert outcome.result == {"images": {"a hen": None, "a fox": fox}}
    assert [i["status"] for i in outcome.summary["images"]] == ["error", "ok"]
    assert [m.display_name for m in outcome.media] == ["generated_1.png"]


async def test_generate_images_all_failing_is_still_ok(
    fake: FakeReplicate, tools: dict[str, ToolHandler]
) -> None:
    fake.default = Fail("down")
    outcome = await call(tools, "generate_images", {"prompts": ["x", "y"]}, context(fake))
    assert outcome.ok
    assert outcome.result == {"images": {"x": None, "y": None}}
    assert outcome.media == ()


async def test_generate_images_never_falls_back_to_the_openai_key(
    fake: FakeReplicate, tools: dict[str, ToolHandler]
) -> None:
    outcome = await call(tools, "generate_images", {"prompts": ["x"]}, context(fake, key=""))
    assert outcome.result == {"error": "No API key available for image generation."}
    assert outcome.summary == {"error": "Missing image generation API key"}
    assert fake.requests == []


async def test_generate_images_bounded_concurrency_and_order(
    fake: FakeReplicate, tools: dict[str, ToolHandler]
) -> None:
    prompts = [f"prompt {i}" for i in range(25)]
    fake.hold()
    task = asyncio.create_task(call(tools, "generate_images", {"prompts": prompts}, context(fake)))
    await fake.wait_for(
        lambda f: f.in_flight >= 20 and all(p.polls >= 3 for p in f.predictions.values())
    )
    assert len(fake.creations) == 20
    fake.release()
    outcome = await task
    assert fake.max_in_flight == 20
    assert list(outcome.result["images"]) == prompts
    assert [i["url"] for i in outcome.summary["images"]] == [url_for(fake, p) for p in prompts]
    assert [m.display_name for m in outcome.media] == [f"generated_{i}.png" for i in range(25)]


async def test_data_url_results_are_stored_as_assets(
    fake: FakeReplicate, tools: dict[str, ToolHandler], store: AssetStore
) -> None:
    fake.default = Succeed(output=as_data_url(PNG))
    outcome = await call(tools, "generate_images", {"prompts": ["x"]}, context(fake))
    stored = await store.put(PNG, "image/png")
    assert outcome.result == {"images": {"x": f"{ASSET_BASE}/local-assets/{stored.name}"}}
    assert [(m.data, m.url) for m in outcome.media] == [(PNG, None)]


@pytest.mark.parametrize(
    "result_url",
    ["http://127.0.0.1:9/files/x.png", "http://10.1.2.3/x.png", "http://intranet/x.png"],
)
async def test_unfetchable_foreign_results_get_no_media(
    fake: FakeReplicate, tools: dict[str, ToolHandler], result_url: str
) -> None:
    fake.default = Succeed(output=result_url)
    outcome = await call(tools, "generate_images", {"prompts": ["x"]}, context(fake))
    assert outcome.result == {"images": {"x": result_url}}
    assert outcome.media == ()


@pytest.mark.parametrize(
    ("url", "fetchable"),
    [
        ("https://replicate.delivery/a.png", True),
        ("http://8.8.8.8/a.png", True),
        ("http://127.0.0.1:7001/a.png", False),
        ("http://localhost/a.png", False),
        ("http://[::1]/a.png", False),
        ("http://192.168.1.2/a.png", False),
        ("http://169.254.169.254/latest", False),
        ("http://printer/a.png", False),
        ("file:///etc/passwd", False),
        ("data:image/png;base64,AAAA", False),
    ],
)
def test_publicly_fetchable(url: str, fetchable: bool) -> None:
    assert publicly_fetchable(url) is fetchable


# -- remove_background ----------------------------------------------------------------------


async def test_remove_background_success(
    fake: FakeReplicate, tools: dict[str, ToolHandler]
) -> None:
    source = "https://example.com/cat.jpg"
    outcome = await call(tools, "remove_background", {"image_urls": [source]}, context(fake))
    result_url = url_for(fake, source)
    (created,) = fake.creations
    assert created.path == "/v1/predictions"
    assert created.json == {
        "version": BACKGROUND_REMOVAL_VERSION,
        "input": {
            "image": source,
            "format": "png",
            "reverse": False,
            "threshold": 0,
            "background_type": "rgba",
        },
    }
    expected = {"images": [{"image_url": source, "result_url": result_url, "status": "ok"}]}
    assert outcome.ok
    assert outcome.result == expected
    assert outcome.summary == expected
    assert [(m.display_name, m.data) for m in outcome.media] == [("no_bg_0.png", fake.png)]
    assert_only_request_key(fake)


async def test_remove_background_sends_local_assets_as_data_urls(
    fake: FakeReplicate, tools: dict[str, ToolHandler], store: AssetStore
) -> None:
    stored = await store.put(PNG, "image/png")
    local = f"{ASSET_BASE}/local-assets/{stored.name}"
    inline = as_data_url(b"already inline")
    external = "https://example.com/dog.png"
    args = {"image_urls": [local, inline, external]}
    outcome = await call(tools, "remove_background", args, context(fake))
    sent = [r.json["input"]["image"] for r in fake.creations]
    assert sorted(sent) == sorted([as_data_url(PNG), inline, external])
    assert [i["image_url"] for i in outcome.result["images"]] == [local, inline, external]
    assert all(i["status"] == "ok" for i in outcome.result["images"])


async def test_remove_background_summary_truncates_urls(
    fake: FakeReplicate, tools: dict[str, ToolHandler]
) -> None:
    source = "https://example.com/" + "a" * 150 + ".png"
    outcome = await call(tools, "remove_background", {"image_urls": [source]}, context(fake))
    assert outcome.result["images"][0]["image_url"] == source
    assert outcome.summary["images"][0]["image_url"] == source[:100] + "..."


async def test_remove_background_25_urls(
    fake: FakeReplicate, tools: dict[str, ToolHandler]
) -> None:
    sources = [f"https://example.com/{i}.png" for i in range(25)]
    fake.script(sources[7], Fail("bad image"))
    fake.hold()
    task = asyncio.create_task(
        call(tools, "remove_background", {"image_urls": sources}, context(fake))
    )
    await fake.wait_for(
        lambda f: f.in_flight >= 20 and all(p.polls >= 3 for p in f.predictions.values())
    )
    fake.release()
    outcome = await task
    assert fake.max_in_flight == 20
    assert len(fake.creations) == 25
    images = outcome.result["images"]
    assert [i["image_url"] for i in images] == sources
    assert [i["result_url"] for i in images] == [
        None if i == 7 else url_for(fake, s) for i, s in enumerate(sources)
    ]
    assert [i["status"] for i in images] == ["error" if i == 7 else "ok" for i in range(25)]
    names = [m.display_name for m in outcome.media]
    assert names == [f"no_bg_{i}.png" for i in range(25) if i != 7]


# -- edit_image -----------------------------------------------------------------------------


async def test_edit_image_success_keeps_full_prompt_and_urls(
    fake: FakeReplicate, tools: dict[str, ToolHandler]
) -> None:
    prompt = "Make the sofa green " + "and keep everything else exactly the same " * 8
    sources = ["https://example.com/" + "s" * 120 + ".png", "https://example.com/ref.png"]
    args = {"prompt": prompt, "image_urls": [*sources, sources[0]], "aspect_ratio": "16:9"}
    outcome = await call(tools, "edit_image", args, context(fake))
    (created,) = fake.creations
    assert created.path == EDIT_PATH
    assert created.json == {
        "input": {
            "prompt": prompt.strip(),
            "images": sources,
            "turbo": True,
            "aspect_ratio": "16:9",
        }
    }
    expected = {
        "image": {
            "prompt": prompt.strip(),
            "image_urls": sources,
            "result_url": url_for(fake, prompt.strip()),
            "status": "ok",
            "aspect_ratio": "16:9",
        }
    }
    assert len(prompt) > 240
    assert outcome.ok
    assert outcome.result == expected
    assert outcome.summary == expected
    assert [(m.display_name, m.data) for m in outcome.media] == [("edited.png", fake.png)]
    assert_only_request_key(fake)


@pytest.mark.parametrize("aspect", ["21:9", "", None, 1.5, "match_input_image"])
async def test_edit_image_invalid_aspect_ratio_falls_back(
    fake: FakeReplicate, tools: dict[str, ToolHandler], aspect: Any
) -> None:
    args = {"prompt": "x", "image_urls": ["https://example.com/a.png"], "aspect_ratio": aspect}
    outcome = await call(tools, "edit_image", args, context(fake))
    assert fake.creations[0].json["input"]["aspect_ratio"] == "match_input_image"
    assert outcome.result["image"]["aspect_ratio"] == "match_input_image"


async def test_edit_image_accepts_the_images_alias(
    fake: FakeReplicate, tools: dict[str, ToolHandler]
) -> None:
    args = {"prompt": "x", "image_urls": None, "images": ["https://example.com/a.png"]}
    outcome = await call(tools, "edit_image", args, context(fake))
    assert outcome.result["image"]["image_urls"] == ["https://example.com/a.png"]


async def test_edit_image_local_asset_goes_as_data_url(
    fake: FakeReplicate, tools: dict[str, ToolHandler], store: AssetStore
) -> None:
    stored = await store.put(PNG, "image/png")
    local = f"http://localhost:7001/local-assets/{stored.name}"
    args = {"prompt": "x", "image_urls": [local]}
    outcome = await call(tools, "edit_image", args, context(fake))
    assert fake.creations[0].json["input"]["images"] == [as_data_url(PNG)]
    assert outcome.result["image"]["image_urls"] == [local]


@pytest.mark.parametrize("failure", [Fail("content policy"), Succeed(output=None)])
async def test_edit_image_failure_is_ok_with_error_status(
    fake: FakeReplicate, tools: dict[str, ToolHandler], failure: Fail | Succeed
) -> None:
    fake.default = failure
    prompt = "p" * 300
    sources = ["https://example.com/" + "u" * 120]
    args = {"prompt": prompt, "image_urls": sources, "aspect_ratio": "1:1"}
    outcome = await call(tools, "edit_image", args, context(fake))
    expected = {
        "image": {"prompt": prompt, "image_urls": sources, "result_url": None, "status": "error"}
    }
    assert outcome.ok
    assert outcome.result == expected
    assert outcome.summary == expected
    assert outcome.media == ()


async def test_edit_image_timeout_is_an_error_status(
    fake: FakeReplicate, store: AssetStore
) -> None:
    fake.default = Hang()
    settings = ReplicateSettings(poll_timeout_s=0.05, first_poll_s=0.001, max_poll_interval_s=0.005)
    tools = image_tool_handlers(store, settings=settings)
    args = {"prompt": "x", "image_urls": ["https://example.com/a.png"]}
    outcome = await call(tools, "edit_image", args, context(fake))
    assert outcome.ok
    assert outcome.result["image"]["status"] == "error"
    assert fake.cancels == ["pred0001"]


# -- checks, in upstream's order ------------------------------------------------------------

GEN, BG, EDIT = "generate_images", "remove_background", "edit_image"
NO_PROMPTS = ("generate_images requires a non-empty prompts list", "Missing prompts")
NO_BG_URLS = ("remove_background requires a non-empty image_urls list", "Missing image_urls")
NO_EDIT_URLS = ("edit_image requires a non-empty image_urls list", "Missing image_urls")
NO_VALID_URLS = ("No valid image URLs provided", "No valid image_urls")
MISSING_REPLICATE = "Missing Replicate API key"
URL = ["https://e.com/a.png"]
K = REQUEST_KEY
CHECKS: list[tuple[str, dict[str, Any], bool, str, tuple[str, str]]] = [
    (GEN, {}, False, "", ("Image generation is disabled.", "Image generation disabled")),
    (GEN, {}, True, "", NO_PROMPTS),
    (GEN, {"prompts": []}, True, K, NO_PROMPTS),
    (GEN, {"prompts": "a fox"}, True, K, NO_PROMPTS),
    (GEN, {"prompts": None}, True, "", NO_PROMPTS),
    (GEN, {"prompts": [" ", ""]}, True, "", ("No valid prompts provided", "No valid prompts")),
    (
        GEN,
        {"prompts": ["a fox"]},
        True,
        "",
        ("No API key available for image generation.", "Missing image generation API key"),
    ),
    (BG, {}, True, "", ("Background removal requires REPLICATE_API_KEY.", MISSING_REPLICATE)),
    (BG, {"image_urls": []}, True, K, NO_BG_URLS),
    (BG, {"image_urls": None}, True, K, NO_BG_URLS),
    (BG, {"image_urls": ["  ", ""]}, True, K, NO_VALID_URLS),
    (EDIT, {}, True, "", ("Image editing requires REPLICATE_API_KEY.", MISSING_REPLICATE)),
    (
        EDIT,
        {"prompt": "  ", "image_urls": URL},
        True,
        K,
        ("edit_image requires a non-empty prompt", "Missing prompt"),
    ),
    (
        EDIT,
        {"prompt": 5, "image_urls": URL},
        True,
        K,
        ("edit_image requires a non-empty prompt", "Missing prompt"),
    ),
    (EDIT, {"prompt": "x"}, True, K, NO_EDIT_URLS),
    (EDIT, {"prompt": "x", "image_urls": [], "images": []}, True, K, NO_EDIT_URLS),
    (EDIT, {"prompt": "x", "image_urls": [" "]}, True, K, NO_VALID_URLS),
]


@pytest.mark.parametrize(("tool", "args", "enabled", "key", "texts"), CHECKS)
async def test_checks_in_order(
    fake: FakeReplicate,
    tools: dict[str, ToolHandler],
    tool: str,
    args: dict[str, Any],
    enabled: bool,
    key: str,
    texts: tuple[str, str],
) -> None:
    outcome = await call(
        tools, tool, args, context(fake, key=key, image_generation_enabled=enabled)
    )
    assert not outcome.ok
    assert (outcome.result, outcome.summary) == ({"error": texts[0]}, {"error": texts[1]})
    assert fake.requests == []
