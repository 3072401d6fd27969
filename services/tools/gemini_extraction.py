"""Asset extraction: Gemini finds each described asset in the input images, we crop it.

The model only returns boxes; every pixel the caller gets back is cut locally from the
normalised source, so a wrong answer can at worst crop the wrong region, never invent
an image. Every step after the API call is defensive because model output is untrusted:
a malformed detection costs that one asset, never the batch.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import os
import ssl
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import certifi
from PIL import Image
from pydantic import BaseModel, Field

from services.common.images import ImageDecoder, ImageRefused
from services.common.input_images import InputImage

# google-genai loads on a worker's first extraction, not at its start (~40 MB; issue 42).
if TYPE_CHECKING:
    from google import genai
    from google.genai import types

DEFAULT_MODEL = "gemini-3.6-flash"
MAX_ASSETS_PER_REQUEST = 25
BOX_SCALE = 1000.0
NO_VALID_SOURCES = "No valid input images were available for asset extraction."
INCOMPLETE_BOXES = "Gemini did not return usable bounding boxes for every requested asset."

_SOURCE_MIME_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/jpg", "image/webp", "image/heic", "image/heif"}
)
_TEMPERATURE = 0.5

SYSTEM_INSTRUCTION = (
    "You are a precise 2D object detector for UI screenshots. You locate each requested "
    "visual asset and report its bounding box. Reply with only one schema-valid JSON object "
    "and nothing else: no prose, no markdown fences. Never return masks, polygons or "
    f"segmentation. Return at most {MAX_ASSETS_PER_REQUEST} objects, one per request id."
)

_BOX_RULES = """BOUNDING-BOX RULES
- box_2d is [ymin, xmin, ymax, xmax], normalised to 0-1000 relative to the source image's \
height (y) and width (x).
- Return the smallest axis-aligned box that contains the whole asset.
- Exclude surrounding UI: cards, buttons, padding, borders, backgrounds, captions and \
neighbouring text are not part of the asset.
- Photos and illustrations: box only the media itself. Logos: include the complete logo \
(mark and wordmark). Icons: box only the glyph.
- Repeated lookalikes are separate instances: use the description's position and context \
to pick exactly the one requested.
- image_index is the source image number the asset is in.
- If the asset is absent, ambiguous or occluded, return image_index=null, box_2d=null, \
label=null for it. Never guess a box.
- Never return masks. Do not wrap the JSON in code fences."""


# -- schema ------------------------------------------------------------------------------

# Strict numbers: lax pydantic would turn `true` or "5" into a coordinate.
_Coordinate = Annotated[float, Field(strict=True)]


class AssetDetection(BaseModel):
    request_id: str = Field(description="The request id this detection answers.")
    image_index: Annotated[int, Field(strict=True)] | None = Field(
        description="Source image number the asset is in, or null when not found."
    )
    box_2d: Annotated[list[_Coordinate], Field(min_length=4, max_length=4)] | None = Field(
        description="[ymin, xmin, ymax, xmax] normalised to 0-1000, or null when not found."
    )
    label: str | None = Field(description="A short name for what was found, or null.")


class AssetDetectionBatch(BaseModel):
    # No extra="forbid": that would emit additionalProperties, which Gemini's schema rejects.
    detections: list[AssetDetection] = Field(max_length=MAX_ASSETS_PER_REQUEST)


# -- results -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceImage:
    number: int  # the caller's 1-based position, kept even when earlier inputs are skipped
    png: bytes
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class ExtractedAsset:
    description: str
    status: str  # "ok" | "error" | "missing"
    box_2d: list[float] | None = None
    image_index: int | None = None
    label: str | None = None
    png: bytes | None = None  # the crop, only when status is "ok"


@dataclass(frozen=True, slots=True)
class ExtractionResult:
    assets: list[ExtractedAsset]
    error: str | None = None


@dataclass(frozen=True, slots=True)
class _Detection:
    image_index: Any
    box_2d: Any
    label: Any


# -- sources -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sources:
    images: list[SourceImage]
    skipped: list[str]  # why each input left out was, for the caller


def decode_sources(inputs: Sequence[InputImage], decoder: ImageDecoder) -> Sources:
    """Each decodable input, upright (EXIF applied) and re-encoded as PNG, decoded within
    the process's image budget (one at a time when large); the others are skipped.

    Blocking (decoding and encoding); run it in a thread.
    """
    sources = Sources([], [])
    for number, source_image in enumerate(inputs, start=1):
        if source_image.mime_type not in _SOURCE_MIME_TYPES:
            continue  # not a format Gemini reads (a GIF)
        try:
            with decoder.open(source_image.data, upright=True) as image:
                buffer = io.BytesIO()
                image.save(buffer, format="PNG")
                source = SourceImage(number, buffer.getvalue(), image.width, image.height)
        except ImageRefused as exc:
            sources.skipped.append(f"Input image {number} was skipped: {exc.message}.")
            continue
        sources.images.append(source)
    return sources


# -- prompt and parsing ------------------------------------------------------------------


def request_ids(count: int) -> list[str]:
    return [f"asset-{n:04d}" for n in range(1, count + 1)]


def build_prompt(requests: Sequence[tuple[str, str]], sources: Sequence[SourceImage]) -> str:
    listing = "\n".join(
        f"- attached image {k} = source image {s.number} "
        f"({s.width}x{s.height} pixels after EXIF normalization)"
        for k, s in enumerate(sources, start=1)
    )
    payload = json.dumps(
        [{"request_id": rid, "description": text} for rid, text in requests],
        ensure_ascii=False,
        indent=1,
    )
    return (
        "Find each requested visual asset in the attached source images.\n\n"
        f"SOURCE IMAGES\n{listing}\n\n"
        "REQUESTS (return exactly one detection per request_id, echoing the id)\n"
        f"{payload}\n\n"
        f"{_BOX_RULES}\n"
    )


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, BaseModel):
        dumped: dict[str, Any] = value.model_dump()
        return dumped
    return value if isinstance(value, Mapping) else None


def parse_detections(
    response: types.GenerateContentResponse, expected: Sequence[str]
) -> dict[str, _Detection]:
    """Detections by request id: the first for each id wins, unexpected ids are ignored.

    The SDK's `parsed` is all-or-nothing, so when it is missing the raw JSON is read item
    by item. Free-form text (code fences, prose) is deliberately not salvaged: the model
    was told to return bare JSON, and guessing at its intent could misplace a crop.
    """
    batch = _as_mapping(response.parsed)
    if batch is None:
        try:
            batch = _as_mapping(json.loads(response.text or ""))
        except ValueError:
            batch = None
    items = batch.get("detections") if batch is not None else None
    wanted = set(expected)
    found: dict[str, _Detection] = {}
    for item in items if isinstance(items, list) else []:
        entry = _as_mapping(item)
        if entry is None:
            continue
        request_id = entry.get("request_id")
        if isinstance(request_id, str) and request_id in wanted and request_id not in found:
            found[request_id] = _Detection(
                entry.get("image_index"), entry.get("box_2d"), entry.get("label")
            )
    return found


def normalise_box(value: Any) -> list[float] | None:
    """`[ymin, xmin, ymax, xmax]` sorted and clamped to the 0-1000 scale, or None if unusable."""
    if not isinstance(value, list | tuple) or len(value) != 4:
        return None
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in value):
        return None
    numbers = [float(v) for v in value]
    if not all(math.isfinite(v) for v in numbers):
        return None
    y0, x0, y1, x1 = numbers
    ymin, ymax = (max(0.0, min(BOX_SCALE, v)) for v in sorted((y0, y1)))
    xmin, xmax = (max(0.0, min(BOX_SCALE, v)) for v in sorted((x0, x1)))
    if ymax <= ymin or xmax <= xmin:
        return None
    return [ymin, xmin, ymax, xmax]


def _image_index(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def crop_png(image: Image.Image, box: list[float]) -> bytes | None:
    """The pixels under a normalised box, widened outwards to whole pixels, as PNG."""
    ymin, xmin, ymax, xmax = box
    width, height = image.size
    # Multiply before dividing so integral boxes land exactly on pixel edges.
    left = min(width, max(0, math.floor(xmin * width / BOX_SCALE)))
    top = min(height, max(0, math.floor(ymin * height / BOX_SCALE)))
    right = min(width, max(0, math.ceil(xmax * width / BOX_SCALE)))
    bottom = min(height, max(0, math.ceil(ymax * height / BOX_SCALE)))
    if right <= left or bottom <= top:
        return None
    buffer = io.BytesIO()
    image.crop((left, top, right, bottom)).save(buffer, format="PNG")
    return buffer.getvalue()


def resolve_all(
    requests: Sequence[tuple[str, str]],
    found: Mapping[str, _Detection],
    sources: Mapping[int, SourceImage],
    decoder: ImageDecoder,
) -> list[ExtractedAsset]:
    """One asset per request, in order; each source with boxes on it is decoded once, from
    its normalised PNG, within the budget (never all of them at once). Blocking."""
    wanted: dict[int, list[tuple[str, list[float]]]] = {}
    for rid, _ in requests:
        detection = found.get(rid)
        box = normalise_box(detection.box_2d) if detection is not None else None
        index = _image_index(detection.image_index) if detection is not None else None
        if box is not None and index is not None and index in sources:
            wanted.setdefault(index, []).append((rid, box))
    crops: dict[str, bytes | None] = {}
    for index, boxes in wanted.items():
        with decoder.open(sources[index].png) as image:
            for rid, box in boxes:
                crops[rid] = crop_png(image, box)
    return [_resolved(text, found.get(rid), rid in crops, crops.get(rid)) for rid, text in requests]


def _resolved(
    description: str, found: _Detection | None, cropped: bool, png: bytes | None
) -> ExtractedAsset:
    if found is None:
        return ExtractedAsset(description, "missing")
    box = normalise_box(found.box_2d)
    index = _image_index(found.image_index)
    label = found.label if isinstance(found.label, str) else None
    if not cropped:
        # An unknown image is still worth reporting with its box: the model did answer.
        return ExtractedAsset(description, "missing", box, index, label)
    return ExtractedAsset(description, "ok" if png else "error", box, index, label, png)


# -- the extractor -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GeminiEndpoint:
    api_key: str
    base_url: str = ""  # empty: Google's endpoint
    timeout_s: float = 60.0
    # Shared across calls: without one the SDK reads the CA bundle three times per client,
    # ~0.2 s of blocking the event loop for every tool call.
    tls: ssl.SSLContext | None = None


def default_tls_context() -> ssl.SSLContext:
    """The verified context the SDK would build itself (same CA sources). Blocking."""
    return ssl.create_default_context(
        cafile=os.environ.get("SSL_CERT_FILE", certifi.where()),
        capath=os.environ.get("SSL_CERT_DIR"),
    )


def generation_config() -> types.GenerateContentConfig:
    from google.genai import types

    return types.GenerateContentConfig(
        system_instruction=SYSTEM_INSTRUCTION,
        temperature=_TEMPERATURE,
        response_mime_type="application/json",
        response_schema=AssetDetectionBatch,
        thinking_config=types.ThinkingConfig(thinking_level=types.ThinkingLevel.MINIMAL),
    )


def _client(endpoint: GeminiEndpoint) -> genai.Client:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(
        # Per-part media resolution is a v1alpha feature.
        api_version="v1alpha",
        base_url=endpoint.base_url or None,
        timeout=max(1, int(endpoint.timeout_s * 1000)),
        # One attempt: the SDK's implicit reconnect sleeps up to 10 s, and the agent decides
        # what to do next with a prompt error rather than a silent stall.
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    if endpoint.tls is not None:
        options.client_args = {"verify": endpoint.tls}
        options.async_client_args = {"ssl": endpoint.tls}
    return genai.Client(api_key=endpoint.api_key, http_options=options)


async def _all(calls: Sequence[Awaitable[dict[str, _Detection]]]) -> list[dict[str, _Detection]]:
    """Every call's result; the first failure cancels the rest and is raised as itself."""

    async def run(call: Awaitable[dict[str, _Detection]]) -> dict[str, _Detection]:
        return await call

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(run(call)) for call in calls]
    except ExceptionGroup as failed:
        first: BaseException = failed
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    return [task.result() for task in tasks]


async def extract_assets(
    descriptions: Sequence[str],
    inputs: Sequence[InputImage],
    endpoint: GeminiEndpoint,
    decoder: ImageDecoder,
    *,
    model: str = DEFAULT_MODEL,
) -> ExtractionResult:
    """One `ExtractedAsset` per description, in request order.

    Raises whatever the API raises (auth, quota, timeout): a failed call fails the batch,
    because a partial answer would silently report the other chunks' assets as missing.
    """
    from google.genai import types

    decoded = await asyncio.to_thread(decode_sources, list(inputs), decoder)
    sources = decoded.images
    if not sources:
        return ExtractionResult([], " ".join([NO_VALID_SOURCES, *decoded.skipped]))
    image_parts = [
        types.Part.from_bytes(
            data=source.png,
            mime_type="image/png",
            media_resolution=types.PartMediaResolutionLevel.MEDIA_RESOLUTION_ULTRA_HIGH,
        )
        for source in sources
    ]
    ids = request_ids(len(descriptions))
    requests = list(zip(ids, descriptions, strict=True))
    chunks = [
        requests[start : start + MAX_ASSETS_PER_REQUEST]
        for start in range(0, len(requests), MAX_ASSETS_PER_REQUEST)
    ]
    config = generation_config()
    client = _client(endpoint)

    async def detect(chunk: list[tuple[str, str]]) -> dict[str, _Detection]:
        contents = types.Content(
            role="user",
            parts=[*image_parts, types.Part.from_text(text=build_prompt(chunk, sources))],
        )
        response = await client.aio.models.generate_content(
            model=model, contents=contents, config=config
        )
        return parse_detections(response, [rid for rid, _ in chunk])

    try:
        async with asyncio.timeout(endpoint.timeout_s):
            answers = await _all([detect(chunk) for chunk in chunks])
    except TimeoutError:
        raise TimeoutError(
            f"Gemini asset detection timed out after {endpoint.timeout_s:g} s"
        ) from None
    finally:
        await client.aio.aclose()
        client.close()
    found: dict[str, _Detection] = {}
    for answer in answers:
        found.update(answer)
    by_number = {source.number: source for source in sources}
    assets = await asyncio.to_thread(resolve_all, requests, found, by_number, decoder)
    complete = all(asset.status == "ok" for asset in assets)
    return ExtractionResult(assets, None if complete else INCOMPLETE_BOXES)
