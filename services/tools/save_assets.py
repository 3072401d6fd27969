"""Uploaded-image assets: staging a request's images, and the `save_assets` tool.

The agent stages every still image of a request (`stage_uploads`) and tells the model the
temporary ids; `save_assets` promotes the ids the model wants to keep into permanent,
served assets (docs/design.md, "Uploaded images and save_assets"). Promotion keeps the base URL that
was current when the image was uploaded, so links match the host the user sees.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from services.common.input_images import InputImage
from services.common.tool_summaries import summarize_text
from services.common.tool_types import FileState, MediaPart
from services.common.uploads import DecodedImage
from services.tools.asset_store import AssetStore, PromotedAsset
from services.tools.image_tools import string_list
from services.tools.types import ToolContext, ToolHandler, ToolOutcome

SUMMARY_ID_CHARS = 100


async def stage_uploads(
    store: AssetStore, images: Sequence[InputImage], base_url: str
) -> dict[str, str]:
    """Each stageable input image's hash mapped to its temporary asset id.

    Images we do not accept (not png/jpeg/gif/webp, over 20 MiB) are left out.
    One at a time: each image may be 20 MiB, so running them all at once only adds memory.
    """
    staged: dict[str, str] = {}
    for image in images:
        if image.sha256 in staged:
            continue
        asset_id = await store.stage_upload(DecodedImage(image.mime_type, image.data), base_url)
        if asset_id is not None:
            staged[image.sha256] = asset_id
    return staged


class AssetTools:
    def __init__(self, store: AssetStore) -> None:
        self.store = store

    def handlers(self) -> dict[str, ToolHandler]:
        return {"save_assets": self.save_assets}

    async def save_assets(
        self, args: dict[str, Any], file: FileState | None, ctx: ToolContext
    ) -> ToolOutcome:
        asset_ids = string_list(args.get("asset_ids"), "save_assets", "asset_ids", "asset IDs")
        if isinstance(asset_ids, ToolOutcome):
            return asset_ids
        promoted = await asyncio.gather(*(self.store.promote(i) for i in asset_ids))
        items = [
            self._item(asset_id, p, ctx) for asset_id, p in zip(asset_ids, promoted, strict=True)
        ]
        summary = [
            {**item, "asset_id": summarize_text(item["asset_id"], SUMMARY_ID_CHARS)}
            for item in items
        ]
        media = await asyncio.gather(*(self._media_part(item) for item in items))
        return ToolOutcome(
            True,
            {"images": items},
            {"images": summary},
            media=tuple(part for part in media if part is not None),
        )

    def _item(
        self, asset_id: str, promoted: PromotedAsset | None, ctx: ToolContext
    ) -> dict[str, Any]:
        if promoted is None:
            return {
                "asset_id": asset_id,
                "public_url": None,
                "content_type": None,
                "status": "error",
            }
        # An upload staged without a known host falls back to this request's base URL.
        base_url = promoted.asset_base_url or ctx.asset_base_url
        return {
            "asset_id": asset_id,
            "public_url": self.store.public_url(promoted.asset.name, base_url),
            "content_type": promoted.asset.content_type,
            "status": "ok",
        }

    async def _media_part(self, item: dict[str, Any]) -> MediaPart | None:
        """Bytes for an asset on a loopback host, which no model provider could fetch.

        As upstream: an asset linked under another host (a tunnel, a deployment) gets
        no image part.
        """
        url = item["public_url"]
        if url is None:
            return None
        name = self.store.local_asset_name(url)
        if name is None:
            return None
        data = await self.store.read(name)
        content_type = self.store.content_type_of(name)
        if data is None or content_type is None:
            return None
        return MediaPart(item["asset_id"], content_type, data=data)


def asset_tool_handlers(store: AssetStore) -> dict[str, ToolHandler]:
    """`save_assets`, on the given store."""
    return AssetTools(store).handlers()
