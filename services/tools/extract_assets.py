"""The `extract_assets` tool: crops of described assets, served at permanent URLs.

Crops go straight to the served store: no temporary id is ever surfaced, so the model
has nothing to pass to save_assets and embeds `public_url` directly.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Sequence
from typing import Any, Protocol

from services.common.images import ImageDecoder
from services.common.tool_summaries import summarize_text
from services.common.tool_types import FileState, MediaPart
from services.tools.gemini_extraction import (
    DEFAULT_MODEL,
    ExtractedAsset,
    ExtractionResult,
    GeminiEndpoint,
    default_tls_context,
    extract_assets,
)
from services.tools.types import ToolContext, ToolHandler, ToolOutcome, failure

log = logging.getLogger(__name__)

SUMMARY_DESCRIPTION_CHARS = 120
NOTHING_EXTRACTED = "No assets could be extracted from the input images."
_PNG = "image/png"


class StoredAssetInfo(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def content_type(self) -> str: ...


class CropStore(Protocol):
    """The served asset store (`services.tools.asset_store`), as far as this tool needs it."""

    async def put(self, data: bytes, content_type: str) -> StoredAssetInfo: ...

    def public_url(self, name: str, base_url: str) -> str: ...


class _LazyTls:
    """One TLS context per handler, built off the event loop on first use."""

    def __init__(self) -> None:
        self._context: ssl.SSLContext | None = None

    async def get(self) -> ssl.SSLContext:
        if self._context is None:
            self._context = await asyncio.to_thread(default_tls_context)
        return self._context


def _descriptions(args: dict[str, Any]) -> list[str] | None:
    raw = args.get("asset_descriptions") or args.get("descriptions")
    if not isinstance(raw, list) or not raw:
        return None
    # Not deduplicated: two identical descriptions may mean two lookalike instances.
    return [item.strip() for item in raw if isinstance(item, str) and item.strip()]


def _redact(message: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        message = message.replace(secret, "[redacted]")
    return message


async def _persist(store: CropStore, png: bytes, base_url: str) -> tuple[str, str] | None:
    try:
        stored = await store.put(png, _PNG)
        return store.public_url(stored.name, base_url), stored.content_type
    except Exception:
        log.warning("could not store an extracted asset", exc_info=True)
        return None


async def assets_outcome(
    extraction: ExtractionResult, store: CropStore, base_url: str
) -> ToolOutcome:
    """Persists each crop and builds the model result, UI summary and crop parts."""
    entries: list[dict[str, Any]] = []
    media: list[MediaPart] = []
    for index, asset in enumerate(extraction.assets):
        entries.append(await _entry(index, asset, store, base_url, media))
    unresolved = [
        {"description": entry["description"], "status": entry["status"]}
        for entry in entries
        if entry["status"] != "ok"
    ]
    ok = len(unresolved) < len(entries)
    result: dict[str, Any] = {"assets": entries}
    if unresolved:
        result["unresolved_assets"] = unresolved
    error = None if ok else (extraction.error or NOTHING_EXTRACTED)
    if error is not None:
        result["error"] = error
    summary = {
        "assets": [
            {
                **entry,
                "description": summarize_text(entry["description"], SUMMARY_DESCRIPTION_CHARS),
                "public_url": entry["public_url"] or "",
            }
            for entry in entries
        ],
        "unresolved_count": len(unresolved),
        "error": error,
    }
    return ToolOutcome(ok=ok, result=result, summary=summary, media=tuple(media))


async def _entry(
    index: int, asset: ExtractedAsset, store: CropStore, base_url: str, media: list[MediaPart]
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "description": asset.description,
        "public_url": None,
        "content_type": None,
        "status": asset.status,
        "image_part_index": None,
        "image_display_name": None,
        "box_2d": asset.box_2d,
        "image_index": asset.image_index,
        "label": asset.label,
    }
    if asset.png is None:
        return entry
    saved = await _persist(store, asset.png, base_url)
    if saved is None:
        entry["status"] = "error"
        return entry
    display_name = f"asset_{index}.png"
    entry.update(
        public_url=saved[0],
        content_type=saved[1],
        status="ok",
        image_part_index=len(media),
        image_display_name=display_name,
    )
    media.append(MediaPart(display_name, _PNG, data=asset.png))
    return entry


def extract_assets_handler(
    store: CropStore,
    images: ImageDecoder,
    *,
    model: str = DEFAULT_MODEL,
    timeout_s: float = 60.0,
) -> ToolHandler:
    """The `extract_assets` tool, persisting crops in `store`, decoding within `images`."""
    tls = _LazyTls()

    async def extract_assets_tool(
        arguments: dict[str, Any], file: FileState | None, context: ToolContext
    ) -> ToolOutcome:
        credentials = context.credentials
        if not credentials.key("gemini"):
            return failure("Asset extraction requires GEMINI_API_KEY.", "Missing Gemini API key")
        if not context.input_images:
            return failure("No input images are available for asset extraction.", "No input images")
        descriptions = _descriptions(arguments)
        if descriptions is None:
            return failure(
                "extract_assets requires a non-empty asset_descriptions list",
                "Missing asset_descriptions",
            )
        if not descriptions:
            return failure("No valid asset descriptions provided", "No valid asset_descriptions")
        try:
            endpoint = GeminiEndpoint(
                credentials.key("gemini"),
                credentials.base_url("gemini"),
                timeout_s,
                await tls.get(),
            )
            extraction = await extract_assets(
                descriptions, context.input_images, endpoint, images, model=model
            )
        except Exception as exc:
            log.warning("extract_assets failed: %s", type(exc).__name__)
            message = _redact(str(exc), credentials.secrets())
            return failure(f"Asset extraction failed: {message}", "Asset extraction failed")
        return await assets_outcome(extraction, store, context.asset_base_url)

    return extract_assets_tool
