"""The Replicate image tools: `generate_images`, `remove_background` and `edit_image`.

Checks, error texts and result shapes follow upstream (docs/design.md, "Image tools"):
per-item failures are reported in each item's `status` and the call itself stays ok.
The key is only ever the request's Replicate token (already merged over the worker's
environment by the caller); no other provider's key is considered.

Images for the model's next turn (media parts), per result URL:

* an http(s) URL on a public host travels as a URL part: the model's provider fetches it;
* an image we hold ourselves (one of our `/local-assets/` URLs) travels as bytes;
* a URL on a loopback or private host cannot be fetched by a model provider, so it never
  travels as a URL. When it is served by the Replicate endpoint we are configured to use
  (a self-hosted or fake Replicate), we download it (bounded) and send the bytes;
  anything else is left out: fetching arbitrary internal URLs handed back by a remote
  service would make this worker an SSRF relay.

Replicate may answer with a `data:` URL instead of a link; such an image is stored as one
of our assets and reported by its public URL, so the model never receives megabytes of
base64 as text.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from services.common.netguard import is_public_address
from services.common.tool_summaries import summarize_text
from services.common.tool_types import FileState, MediaPart
from services.tools.asset_store import AssetStore, is_loopback_host
from services.tools.definitions import EDIT_IMAGE_ASPECT_RATIOS
from services.tools.replicate_client import (
    BACKGROUND_REMOVAL_VERSION,
    IMAGE_EDIT_MODEL,
    Z_IMAGE_TURBO,
    ModelRef,
    ReplicateClient,
    ReplicateSettings,
    background_removal_input,
    edit_input,
    generation_input,
    guess_image_mime,
)
from services.tools.types import ToolContext, ToolHandler, ToolOutcome, failure

logger = logging.getLogger(__name__)

SUMMARY_URL_CHARS = 100
DEFAULT_ASPECT_RATIO = "match_input_image"


def clean_strings(values: Sequence[Any]) -> list[str]:
    """Trimmed, non-empty strings in first-occurrence order, without duplicates."""
    seen: dict[str, None] = {}
    for value in values:
        if isinstance(value, str) and (text := value.strip()):
            seen.setdefault(text, None)
    return list(seen)


_URLS = "image URLs"


def string_list(raw: object, tool: str, key: str, noun: str) -> list[str] | ToolOutcome:
    """Argument `key` of `tool` as `clean_strings`, or the failure saying it is missing
    (not a non-empty list) or holds no usable `noun`."""
    if not isinstance(raw, list) or not raw:
        return failure(f"{tool} requires a non-empty {key} list", f"Missing {key}")
    values = clean_strings(raw)
    if not values:
        return failure(f"No valid {noun} provided", f"No valid {key}")
    return values


def publicly_fetchable(url: str) -> bool:
    """Whether a model provider could fetch `url`: http(s) on a host that is not local.

    Judged without DNS: literal addresses must be public, and loopback names are refused.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    host = parts.hostname
    if parts.scheme.lower() not in ("http", "https") or not host or is_loopback_host(host):
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." in host  # a single-label name only resolves inside some private network
    return is_public_address(address)


class ImageTools:
    def __init__(self, store: AssetStore, settings: ReplicateSettings | None = None) -> None:
        self.store = store
        self.settings = settings or ReplicateSettings()

    def handlers(self) -> dict[str, ToolHandler]:
        return {
            "generate_images": self.generate_images,
            "remove_background": self.remove_background,
            "edit_image": self.edit_image,
        }

    def _client(self, ctx: ToolContext) -> ReplicateClient:
        creds = ctx.credentials
        return ReplicateClient(creds.key("replicate"), creds.base_url("replicate"), self.settings)

    # -- the tools ---------------------------------------------------------------------------

    async def generate_images(
        self, args: dict[str, Any], file: FileState | None, ctx: ToolContext
    ) -> ToolOutcome:
        if not ctx.flags.image_generation_enabled:
            return failure("Image generation is disabled.", "Image generation disabled")
        prompts = string_list(args.get("prompts"), "generate_images", "prompts", "prompts")
        if isinstance(prompts, ToolOutcome):
            return prompts
        if not ctx.credentials.key("replicate"):
            return failure(
                "No API key available for image generation.", "Missing image generation API key"
            )
        async with self._client(ctx) as client:
            inputs = [generation_input(p) for p in prompts]
            urls = await client.run_many_for_urls(
                ModelRef(model=Z_IMAGE_TURBO), inputs, Z_IMAGE_TURBO
            )
            urls = await self._settle_all(urls, ctx)
            media = await self._media(
                client, ctx, [(url, f"generated_{i}.png") for i, url in enumerate(urls)]
            )
        return ToolOutcome(
            ok=True,
            result={"images": dict(zip(prompts, urls, strict=True))},
            summary={
                "images": [
                    {"prompt": p, "url": u, "status": _status(u)}
                    for p, u in zip(prompts, urls, strict=True)
                ]
            },
            media=media,
        )

    async def remove_background(
        self, args: dict[str, Any], file: FileState | None, ctx: ToolContext
    ) -> ToolOutcome:
        if not ctx.credentials.key("replicate"):
            return failure(
                "Background removal requires REPLICATE_API_KEY.", "Missing Replicate API key"
            )
        sources = string_list(args.get("image_urls"), "remove_background", "image_urls", _URLS)
        if isinstance(sources, ToolOutcome):
            return sources
        async with self._client(ctx) as client:
            images = await self._inline_local(sources, ctx)
            inputs = [background_removal_input(image) for image in images]
            urls = await client.run_many_for_urls(
                ModelRef(version=BACKGROUND_REMOVAL_VERSION), inputs, "background removal"
            )
            urls = await self._settle_all(urls, ctx)
            media = await self._media(
                client, ctx, [(url, f"no_bg_{i}.png") for i, url in enumerate(urls)]
            )
        items = [
            {"image_url": source, "result_url": url, "status": _status(url)}
            for source, url in zip(sources, urls, strict=True)
        ]
        summary_items = [
            {**item, "image_url": summarize_text(source, SUMMARY_URL_CHARS)}
            for source, item in zip(sources, items, strict=True)
        ]
        return ToolOutcome(True, {"images": items}, {"images": summary_items}, media=media)

    async def edit_image(
        self, args: dict[str, Any], file: FileState | None, ctx: ToolContext
    ) -> ToolOutcome:
        if not ctx.credentials.key("replicate"):
            return failure("Image editing requires REPLICATE_API_KEY.", "Missing Replicate API key")
        raw_prompt = args.get("prompt")
        prompt = raw_prompt.strip() if isinstance(raw_prompt, str) else ""
        if not prompt:
            return failure("edit_image requires a non-empty prompt", "Missing prompt")
        raw = args.get("image_urls") or args.get("images")
        sources = string_list(raw, "edit_image", "image_urls", _URLS)
        if isinstance(sources, ToolOutcome):
            return sources
        aspect = args.get("aspect_ratio")
        aspect_ratio = aspect.strip() if isinstance(aspect, str) else ""
        if aspect_ratio not in EDIT_IMAGE_ASPECT_RATIOS:
            aspect_ratio = DEFAULT_ASPECT_RATIO
        async with self._client(ctx) as client:
            url: str | None
            try:
                images = await self._inline_local(sources, ctx)
                url = await client.run_for_url(
                    ModelRef(model=IMAGE_EDIT_MODEL),
                    edit_input(prompt, images, aspect_ratio),
                    IMAGE_EDIT_MODEL,
                )
                url = await self._settle(url, ctx)
            except Exception as exc:
                logger.warning("edit_image failed: %s", exc)
                url = None
            if url is None:
                failed = {"prompt": prompt, "image_urls": sources, "result_url": None}
                body = {"image": {**failed, "status": "error"}}
                return ToolOutcome(True, body, body)
            media = await self._media(client, ctx, [(url, "edited.png")])
        image = {
            "prompt": prompt,
            "image_urls": sources,
            "result_url": url,
            "status": "ok",
            "aspect_ratio": aspect_ratio,
        }
        return ToolOutcome(True, {"image": image}, {"image": dict(image)}, media=media)

    # -- shared steps ------------------------------------------------------------------------

    async def _inline_local(self, urls: Sequence[str], ctx: ToolContext) -> list[str]:
        """Our own asset URLs as data URLs (Replicate cannot reach us); others unchanged."""
        own = (ctx.asset_base_url,)
        return list(await asyncio.gather(*(self.store.local_url_to_data_url(u, own) for u in urls)))

    async def _settle(self, url: str | None, ctx: ToolContext) -> str | None:
        if url is None or url[:5].lower() != "data:":
            return url
        stored = await self.store.persist_data_url(url)
        if stored is None:
            logger.warning("Replicate returned a data URL we cannot store")
            return None
        return self.store.public_url(stored.name, ctx.asset_base_url)

    async def _settle_all(self, urls: Sequence[str | None], ctx: ToolContext) -> list[str | None]:
        return list(await asyncio.gather(*(self._settle(u, ctx) for u in urls)))

    async def _media(
        self,
        client: ReplicateClient,
        ctx: ToolContext,
        named: Sequence[tuple[str | None, str]],
    ) -> tuple[MediaPart, ...]:
        parts = await asyncio.gather(
            *(self._media_part(client, ctx, url, name) for url, name in named if url is not None)
        )
        return tuple(part for part in parts if part is not None)

    async def _media_part(
        self, client: ReplicateClient, ctx: ToolContext, url: str, display_name: str
    ) -> MediaPart | None:
        own = self.store.local_asset_name(url, (ctx.asset_base_url,))
        if own is not None:
            data = await self.store.read(own)
            content_type = self.store.content_type_of(own)
            if data is None or content_type is None:
                return None
            return MediaPart(display_name, content_type, data=data)
        if publicly_fetchable(url):
            return MediaPart(display_name, guess_image_mime(url), url=url)
        fetched = await client.fetch_image(url)
        if fetched is None:
            return None
        data, content_type = fetched
        return MediaPart(display_name, content_type, data=data)


def _status(url: str | None) -> str:
    return "ok" if url else "error"


def image_tool_handlers(
    store: AssetStore, *, settings: ReplicateSettings | None = None
) -> dict[str, ToolHandler]:
    """`generate_images`, `remove_background` and `edit_image`, sharing one asset store."""
    return ImageTools(store, settings).handlers()
