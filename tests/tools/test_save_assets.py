"""save_assets: promoting staged uploads into served assets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.common.input_images import InputImage
from services.common.uploads import DecodedImage
from services.tools.asset_store import AssetStore
from services.tools.save_assets import asset_tool_handlers, stage_uploads
from services.tools.types import ToolContext, ToolHandler, ToolOutcome

PNG = b"\x89PNG\r\n\x1a\n" + b"logo"
WEBP = b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"photo"
LOCAL = "http://127.0.0.1:7001"
TUNNEL = "https://abc.trycloudflare.com"


def upload(data: bytes, content_type: str = "image/png") -> DecodedImage:
    return DecodedImage(content_type, data)


@pytest.fixture
def store(tmp_path: Path) -> AssetStore:
    return AssetStore(tmp_path)


@pytest.fixture
def save(store: AssetStore) -> ToolHandler:
    return asset_tool_handlers(store)["save_assets"]


async def run(save: ToolHandler, args: dict[str, Any], base: str = LOCAL) -> ToolOutcome:
    return await save(args, None, ToolContext(asset_base_url=base))


async def test_promotes_a_staged_upload(
    save: ToolHandler, store: AssetStore, tmp_path: Path
) -> None:
    asset_id = await store.stage_upload(upload(PNG), LOCAL)
    assert asset_id is not None
    outcome = await run(save, {"asset_ids": [asset_id]})
    assert outcome.ok
    (item,) = outcome.result["images"]
    assert item["asset_id"] == asset_id
    assert item["status"] == "ok"
    assert item["content_type"] == "image/png"
    assert item["public_url"].startswith(f"{LOCAL}/local-assets/asset_")
    assert asset_id not in item["public_url"]
    assert outcome.summary == outcome.result
    assert len(list((tmp_path / "assets").iterdir())) == 1
    assert [(m.display_name, m.mime_type, m.data, m.url) for m in outcome.media] == [
        (asset_id, "image/png", PNG, None)
    ]


async def test_public_url_uses_the_base_url_captured_at_upload(
    save: ToolHandler, store: AssetStore
) -> None:
    asset_id = await store.stage_upload(upload(WEBP, "image/webp"), TUNNEL)
    assert asset_id is not None
    # The request's own base differs: the upload's host wins.
    outcome = await run(save, {"asset_ids": [asset_id]}, base=LOCAL)
    (item,) = outcome.result["images"]
    assert item["public_url"].startswith(f"{TUNNEL}/local-assets/asset_")
    assert item["public_url"].endswith(".webp")
    # Not a loopback host: as upstream, no image part.
    assert outcome.media == ()


async def test_upload_without_a_base_url_uses_the_request_base(
    save: ToolHandler, store: AssetStore
) -> None:
    asset_id = await store.stage_upload(upload(PNG), "")
    assert asset_id is not None
    outcome = await run(save, {"asset_ids": [asset_id]}, base=LOCAL)
    assert outcome.result["images"][0]["public_url"].startswith(f"{LOCAL}/local-assets/")


async def test_unknown_ids_are_per_item_errors(save: ToolHandler, store: AssetStore) -> None:
    known = await store.stage_upload(upload(PNG), LOCAL)
    assert known is not None
    unknown = "tmp_asset_" + "0" * 24
    outcome = await run(save, {"asset_ids": [unknown, known, "../../etc/passwd"]})
    assert outcome.ok
    images = outcome.result["images"]
    assert images[0] == {
        "asset_id": unknown,
        "public_url": None,
        "content_type": None,
        "status": "error",
    }
    assert images[1]["status"] == "ok"
    assert images[2]["status"] == "error"
    assert [m.display_name for m in outcome.media] == [known]


async def test_ids_are_trimmed_and_deduplicated(save: ToolHandler, store: AssetStore) -> None:
    asset_id = await store.stage_upload(upload(PNG), LOCAL)
    assert asset_id is not None
    outcome = await run(save, {"asset_ids": [f"  {asset_id} ", asset_id, "", 7]})
    assert [i["asset_id"] for i in outcome.result["images"]] == [asset_id]


async def test_summary_truncates_long_ids(save: ToolHandler) -> None:
    long_id = "tmp_asset_" + "z" * 150
    outcome = await run(save, {"asset_ids": [long_id]})
    assert outcome.result["images"][0]["asset_id"] == long_id
    assert outcome.summary["images"][0]["asset_id"] == long_id[:100] + "..."


@pytest.mark.parametrize(
    ("args", "result", "summary"),
    [
        ({}, "save_assets requires a non-empty asset_ids list", "Missing asset_ids"),
        ({"asset_ids": []}, "save_assets requires a non-empty asset_ids list", "Missing asset_ids"),
        (
            {"asset_ids": None},
            "save_assets requires a non-empty asset_ids list",
            "Missing asset_ids",
        ),
        (
            {"asset_ids": "tmp_asset_x"},
            "save_assets requires a non-empty asset_ids list",
            "Missing asset_ids",
        ),
        ({"asset_ids": ["  ", ""]}, "No valid asset IDs provided", "No valid asset_ids"),
    ],
)
async def test_checks(save: ToolHandler, args: dict[str, Any], result: str, summary: str) -> None:
    outcome = await run(save, args)
    assert not outcome.ok
    assert (outcome.result, outcome.summary) == ({"error": result}, {"error": summary})


async def test_staged_ids_round_trip_through_save_assets(
    save: ToolHandler, store: AssetStore
) -> None:
    images = [InputImage.of("image/png", PNG), InputImage.of("image/webp", WEBP)]
    images.append(InputImage.of("image/svg+xml", b"<svg/>"))  # not stageable
    staged = await stage_uploads(store, images, LOCAL)
    assert len(staged) == 2
    outcome = await run(save, {"asset_ids": list(staged.values())})
    assert [i["status"] for i in outcome.result["images"]] == ["ok", "ok"]
    assert [m.data for m in outcome.media] == [PNG, WEBP]
