"""extract_assets end to end: the real google-genai SDK against a fake Gemini, real crops."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pillow_heif
import pytest
from PIL import Image

from services.common.credentials import Credentials, Endpoint
from services.common.images import ImageDecoder, ImageLimits
from services.common.input_images import InputImage
from services.tools.asset_store import AssetStore, StoredAsset
from services.tools.extract_assets import NOTHING_EXTRACTED, CropStore, extract_assets_handler
from services.tools.gemini_extraction import (
    INCOMPLETE_BOXES,
    NO_VALID_SOURCES,
    ExtractedAsset,
    GeminiEndpoint,
    crop_png,
    extract_assets,
    normalise_box,
)
from services.tools.types import ToolContext, ToolOutcome
from tests.fakes.gemini_detect_server import FakeGeminiDetect, Reply, detection, detections_json

KEY = "AIzaFAKE-extract-0123456789"
DECODER = ImageDecoder(ImageLimits())
BASE = "http://127.0.0.1:7001"
WHITE, RED, BLUE, GREEN = (255, 255, 255), (255, 0, 0), (0, 0, 255), (0, 160, 0)
Colour = tuple[int, ...]


@dataclass
class DictStore:
    files: dict[str, bytes] = field(default_factory=dict)
    broken: bool = False

    async def put(self, data: bytes, content_type: str) -> StoredAsset:
        if self.broken:
            raise OSError("disk full")
        name = f"asset_{hashlib.sha256(data).hexdigest()[:24]}.png"
        self.files[name] = data
        return StoredAsset(name, content_type, len(data))

    def public_url(self, name: str, base_url: str) -> str:
        return f"{base_url}/local-assets/{name}"


def canvas(size: tuple[int, int], *rects: tuple[tuple[int, int, int, int], Colour]) -> Image.Image:
    image = Image.new("RGB", size, WHITE)
    for box, colour in rects:
        image.paste(colour, box)
    return image


def source(
    image: Image.Image, fmt: str = "PNG", mime: str = "image/png", **save: Any
) -> InputImage:
    """An input image as the worker holds it (parsed once by the agent)."""
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **save)
    return InputImage.of(mime, buffer.getvalue())


def values_of(image: Image.Image) -> list[Colour]:
    return [tuple(v) if isinstance(v, tuple) else (int(v),) for v in image.get_flattened_data()]


def pixels(png: bytes | None) -> tuple[tuple[int, int], list[Colour]]:
    assert png is not None
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    return image.size, values_of(image)


def solid(png: bytes | None, size: tuple[int, int], colour: Colour) -> bool:
    got_size, values = pixels(png)
    return got_size == size and all(value[: len(colour)] == colour for value in values)


# 100×100: red square at x 10..30, y 20..40; blue block at x 60..90, y 50..100.
SCENE = canvas((100, 100), ((10, 20, 30, 40), RED), ((60, 50, 90, 100), BLUE))
RED_BOX, BLUE_BOX = [200, 100, 400, 300], [500, 600, 1000, 900]
TEN = canvas((10, 10), ((0, 0, 5, 5), RED))
ANY_IMAGE = InputImage.of("image/png", b"x")  # checked before any image is read


@dataclass
class Rig:
    fake: FakeGeminiDetect
    store: DictStore = field(default_factory=DictStore)

    def context(self, *images: InputImage, key: str = KEY) -> ToolContext:
        creds = Credentials.of(gemini=Endpoint(key, self.fake.base_url))
        return ToolContext(input_images=images, credentials=creds, asset_base_url=BASE)

    async def call(self, args: dict[str, Any], *images: InputImage, **kw: Any) -> ToolOutcome:
        store: CropStore = kw.get("store") or self.store
        decoder = kw.get("decoder") or DECODER
        handler = extract_assets_handler(store, decoder, timeout_s=kw.get("timeout_s", 30.0))
        return await handler(args, None, self.context(*images, key=kw.get("key", KEY)))

    async def run(self, descriptions: list[str], *images: InputImage, **kw: Any) -> ToolOutcome:
        images = images or (source(SCENE),)
        return await self.call({"asset_descriptions": descriptions}, *images, **kw)


@pytest.fixture
async def rig(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Rig]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    fake = FakeGeminiDetect()
    await fake.start()
    yield Rig(fake)
    await fake.stop()


# -- checks, in order --------------------------------------------------------------------

MISSING = (
    "extract_assets requires a non-empty asset_descriptions list",
    "Missing asset_descriptions",
)
BLANK = ("No valid asset descriptions provided", "No valid asset_descriptions")


@pytest.mark.parametrize(
    ("key", "images", "args", "errors"),
    [
        ("", (), {}, ("Asset extraction requires GEMINI_API_KEY.", "Missing Gemini API key")),
        (KEY, (), {}, ("No input images are available for asset extraction.", "No input images")),
        (KEY, (ANY_IMAGE,), {}, MISSING),
        (KEY, (ANY_IMAGE,), {"asset_descriptions": []}, MISSING),
        (KEY, (ANY_IMAGE,), {"asset_descriptions": None, "descriptions": []}, MISSING),
        (KEY, (ANY_IMAGE,), {"asset_descriptions": "logo"}, MISSING),
        (KEY, (ANY_IMAGE,), {"asset_descriptions": ["", "   ", 7, None]}, BLANK),
    ],
)
async def test_checks_in_order(
    rig: Rig, key: str, images: tuple[InputImage, ...], args: dict[str, Any], errors: Any
) -> None:
    outcome = await rig.call(args, *images, key=key)
    want = (False, {"error": errors[0]}, {"error": errors[1]})
    assert (outcome.ok, outcome.result, outcome.summary) == want
    assert rig.fake.requests == []


async def test_alias_blanks_dropped_not_deduplicated(rig: Rig) -> None:
    outcome = await rig.call({"descriptions": [" red square ", "", "red"]}, source(SCENE))
    assert [a["description"] for a in outcome.result["assets"]] == ["red square", "red"]
    assert rig.fake.requests[0].request_ids == ["asset-0001", "asset-0002"]
    await rig.run(["logo", " ", "logo"])
    assert rig.fake.requests[1].request_ids == ["asset-0001", "asset-0002"]


@pytest.mark.parametrize("code", [401, 429, 500])
async def test_api_error_is_a_failed_tool_not_an_exception(rig: Rig, code: int) -> None:
    rig.fake.add_http_error(code, f"quota exceeded for key {KEY}")
    outcome = await rig.run(["logo"])
    error = outcome.result["error"]
    assert error.startswith(f"Asset extraction failed: {code} ")
    assert "quota exceeded for key [redacted]" in error
    assert (outcome.ok, outcome.summary) == (False, {"error": "Asset extraction failed"})
    assert (outcome.media, rig.store.files) == ((), {})


async def test_one_failed_chunk_fails_the_batch(rig: Rig) -> None:
    rig.fake.detections = {f"asset-{n:04d}": detection(1, RED_BOX) for n in range(1, 27)}
    rig.fake.add_http_error(429)
    outcome = await rig.run(["red"] * 26)
    assert outcome.summary == {"error": "Asset extraction failed"}
    assert rig.store.files == {}


async def test_timeout_is_a_failed_tool(rig: Rig) -> None:
    rig.fake.hang = True
    outcome = await rig.run(["logo"], timeout_s=0.3)
    message = "Asset extraction failed: Gemini asset detection timed out after 0.3 s"
    assert outcome.result == {"error": message}


# -- result shapes -----------------------------------------------------------------------


async def test_two_assets_cropped_stored_and_attached(rig: Rig) -> None:
    rig.fake.detections = {
        "asset-0001": detection(1, RED_BOX, "red square"),
        "asset-0002": detection(1, BLUE_BOX, "blue block"),
    }
    outcome = await rig.run(["the red square", "the blue block"])
    assert outcome.ok is True
    assert '"asset_id"' not in json.dumps([outcome.result, outcome.summary])
    assets = outcome.result["assets"]
    assert len(rig.store.files) == 2
    urls = {f"{BASE}/local-assets/{name}" for name in rig.store.files}
    assert {a["public_url"] for a in assets} == urls
    assert assets[0] == {
        "description": "the red square",
        "public_url": assets[0]["public_url"],
        "content_type": "image/png",
        "status": "ok",
        "image_part_index": 0,
        "image_display_name": "asset_0.png",
        "box_2d": [200.0, 100.0, 400.0, 300.0],
        "image_index": 1,
        "label": "red square",
    }
    assert (assets[1]["image_part_index"], assets[1]["image_display_name"]) == (1, "asset_1.png")
    assert outcome.result.keys() == {"assets"}
    assert outcome.summary == {"assets": assets, "unresolved_count": 0, "error": None}
    assert [(p.display_name, p.mime_type, p.url) for p in outcome.media] == [
        ("asset_0.png", "image/png", None),
        ("asset_1.png", "image/png", None),
    ]
    red, blue = (p.data for p in outcome.media)
    assert solid(red, (20, 20), RED)
    assert solid(blue, (30, 50), BLUE)
    assert set(rig.store.files.values()) == {red, blue}


async def test_crops_land_in_the_real_asset_store(rig: Rig, tmp_path: Path) -> None:
    real = AssetStore(tmp_path)
    rig.fake.detections = {"asset-0001": detection(1, RED_BOX)}
    outcome = await rig.run(["red"], store=real)
    url = outcome.result["assets"][0]["public_url"]
    assert url.startswith(f"{BASE}/local-assets/asset_")
    assert await real.read(url.rsplit("/", 1)[1]) == outcome.media[0].data


async def test_partial_success(rig: Rig) -> None:
    rig.fake.detections = {"asset-0002": detection(1, RED_BOX)}
    outcome = await rig.run(["mascot", "red square " + "x" * 200])
    assert outcome.ok is True
    assert "error" not in outcome.result
    assert outcome.result["unresolved_assets"] == [{"description": "mascot", "status": "missing"}]
    assert (outcome.summary["unresolved_count"], outcome.summary["error"]) == (1, None)
    assert outcome.result["assets"][0]["public_url"] is None
    missing, found = outcome.summary["assets"]
    assert missing == {**missing, "public_url": "", "image_part_index": None, "box_2d": None}
    assert (found["image_part_index"], found["image_display_name"]) == (0, "asset_1.png")
    assert found["description"] == ("red square " + "x" * 200)[:120] + "..."
    assert [p.display_name for p in outcome.media] == ["asset_1.png"]


async def test_all_missing(rig: Rig) -> None:
    outcome = await rig.run(["mascot", "logo"])
    assert outcome.ok is False
    assert outcome.result["error"] == INCOMPLETE_BOXES
    assert "bounding boxes" in outcome.summary["error"]
    assert outcome.summary["unresolved_count"] == 2
    assert (outcome.media, rig.store.files) == ((), {})


async def test_store_failure_marks_error(rig: Rig) -> None:
    rig.fake.detections = {"asset-0001": detection(1, RED_BOX)}
    outcome = await rig.run(["red"], store=DictStore(broken=True))
    assert (outcome.ok, outcome.media) == (False, ())
    assert outcome.result["assets"][0]["status"] == "error"
    assert outcome.result["unresolved_assets"] == [{"description": "red", "status": "error"}]
    assert outcome.result["error"] == NOTHING_EXTRACTED


async def test_no_decodable_source_makes_no_call(rig: Rig) -> None:
    gif = source(SCENE, "GIF", "image/gif")
    outcome = await rig.run(["logo"], gif, InputImage.of("image/png", b"not an image"))
    error = (
        f"{NO_VALID_SOURCES} Input image 2 was skipped: "
        "the data is not a PNG, JPEG, GIF, WebP or HEIF image."
    )
    assert outcome.ok is False
    assert outcome.result == {"assets": [], "error": error}
    assert outcome.summary == {"assets": [], "unresolved_count": 0, "error": error}
    assert rig.fake.requests == []


async def test_a_source_over_the_pixel_budget_is_skipped_saying_why(rig: Rig) -> None:
    outcome = await rig.run(["logo"], source(TEN), decoder=ImageDecoder(ImageLimits(50)))
    assert outcome.ok is False
    assert "Input image 1 was skipped: the image is 10×10 pixels (PNG)" in outcome.result["error"]
    assert "S2C_IMAGE_MAX_PIXELS" in outcome.result["error"]
    assert rig.fake.requests == []


# -- the request -------------------------------------------------------------------------

# fmt: off
PINNED_PHRASES = [
    '"asset-0001"', '"asset-0002"', '"hero photo"', "[ymin, xmin, ymax, xmax]",
    "attached image 1 = source image 1 (100x100 pixels after EXIF normalization)",
    "attached image 2 = source image 2 (30x20 pixels", "smallest axis-aligned box",
    "Exclude surrounding UI", "Repeated lookalikes are separate instances",
    "image_index=null, box_2d=null", "Never return masks", "Never guess a box",
]
# fmt: on


def snake(mapping: dict[str, Any]) -> dict[str, Any]:
    # The SDK writes nested config keys in either case; the API accepts both.
    return {
        "".join(f"_{c.lower()}" if c.isupper() else c for c in k): v for k, v in mapping.items()
    }


async def test_request_body(rig: Rig) -> None:
    second = canvas((30, 20), ((0, 0, 30, 20), GREEN))
    await rig.run(["logo", "hero photo"], source(SCENE), source(second))
    (call,) = rig.fake.requests
    assert (call.version, call.model) == ("v1alpha", "gemini-3.6-flash")
    assert call.headers["x-goog-api-key"] == KEY
    config = call.body["generationConfig"]
    assert (config["temperature"], config["responseMimeType"]) == (0.5, "application/json")
    assert snake(config["thinkingConfig"]) == {"thinking_level": "MINIMAL"}
    schema = config["responseSchema"]
    assert "additional" not in json.dumps(schema).lower()
    item = schema["properties"]["detections"]["items"]
    assert set(item["properties"]) == {"request_id", "image_index", "box_2d", "label"}
    assert "Never return masks" in call.body["systemInstruction"]["parts"][0]["text"]
    first, image_2, prompt = call.parts
    for part, image in ((first, SCENE), (image_2, second)):
        assert snake(part["mediaResolution"]) == {"level": "MEDIA_RESOLUTION_ULTRA_HIGH"}
        inline = snake(part["inlineData"])
        assert inline["mime_type"] == "image/png"
        sent = base64.urlsafe_b64decode(inline["data"])
        assert pixels(sent) == (image.size, values_of(image))
    assert [phrase for phrase in PINNED_PHRASES if phrase not in prompt["text"]] == []


async def test_51_descriptions_make_3_concurrent_calls(rig: Rig) -> None:
    rig.fake.require_concurrent(3)
    descriptions = [f"item {n}" for n in range(51)]
    outcome = await rig.run(descriptions, source(SCENE), source(TEN))
    chunks = sorted((call.request_ids for call in rig.fake.requests), key=lambda ids: ids[0])
    assert [len(ids) for ids in chunks] == [25, 25, 1]
    assert [rid for ids in chunks for rid in ids] == [f"asset-{n:04d}" for n in range(1, 52)]
    for call in rig.fake.requests:
        assert ["inlineData" in p for p in call.parts] == [True, True, False]
    assert [a["description"] for a in outcome.result["assets"]] == descriptions
    assert {a["status"] for a in outcome.result["assets"]} == {"missing"}


# -- mapping and sources -----------------------------------------------------------------


async def test_out_of_order_detections_map_back(rig: Rig) -> None:
    rig.fake.reverse_order = True
    rig.fake.detections = {
        "asset-0001": detection(1, BLUE_BOX, "blue"),
        "asset-0002": detection(1, RED_BOX, "red"),
    }
    outcome = await rig.run(["blue block", "red square"])
    assert [a["label"] for a in outcome.result["assets"]] == ["blue", "red"]
    assert solid(outcome.media[0].data, (30, 50), BLUE)
    assert solid(outcome.media[1].data, (20, 20), RED)


async def test_first_detection_wins_and_foreign_ids_are_ignored(rig: Rig) -> None:
    items = [
        detection(1, [0, 0, 1000, 1000], request_id="asset-0099"),
        detection(1, RED_BOX, "first", request_id="asset-0001"),
        detection(1, BLUE_BOX, "second", request_id="asset-0001"),
    ]
    rig.fake.responder = lambda call: Reply(detections_json(items))
    outcome = await rig.run(["red"])
    assert [a["label"] for a in outcome.result["assets"]] == ["first"]
    assert solid(outcome.media[0].data, (20, 20), RED)


async def test_lookalikes_left_and_right(rig: Rig) -> None:
    # Same shape twice; the colours only tell the test which crop came from where.
    scene = canvas((200, 50), ((10, 10, 40, 40), GREEN), ((160, 10, 190, 40), BLUE))
    rig.fake.detections = {
        "asset-0001": detection(1, [200, 50, 800, 200]),
        "asset-0002": detection(1, [200, 800, 800, 950]),
    }
    outcome = await rig.run(["square icon", "square icon"], source(scene))
    assert solid(outcome.media[0].data, (30, 30), GREEN)
    assert solid(outcome.media[1].data, (30, 30), BLUE)


async def test_invalid_source_keeps_numbering(rig: Rig) -> None:
    third = canvas((40, 40), ((0, 0, 40, 40), GREEN))
    gif = source(SCENE, "GIF", "image/gif")
    rig.fake.detections = {
        "asset-0001": detection(3, [0, 0, 500, 500]),
        "asset-0002": detection(2, RED_BOX),
    }
    outcome = await rig.run(["green", "in the gif"], source(SCENE), gif, source(third))
    prompt = rig.fake.requests[0].prompt
    assert "attached image 2 = source image 3 (40x40" in prompt
    assert "source image 2 " not in prompt
    assert len(rig.fake.requests[0].parts) == 3
    green, ghost = outcome.result["assets"]
    assert (green["status"], green["image_index"]) == ("ok", 3)
    assert solid(outcome.media[0].data, (20, 20), GREEN)
    assert ghost == {**ghost, "status": "missing", "image_index": 2, "box_2d": RED_BOX}


async def test_exif_rotated_jpeg(rig: Rig) -> None:
    stored = canvas((40, 20), ((0, 0, 20, 20), RED), ((20, 0, 40, 20), BLUE))
    exif = Image.Exif()
    exif[0x0112] = 6  # shown rotated 90° clockwise: stored left (red) becomes the top
    jpeg = source(stored, "JPEG", "image/jpeg", exif=exif, quality=100, subsampling=0)
    rig.fake.detections = {"asset-0001": detection(1, [0, 0, 400, 1000])}
    outcome = await rig.run(["top half"], jpeg)
    assert "source image 1 (20x40 pixels" in rig.fake.requests[0].prompt
    sent = base64.urlsafe_b64decode(rig.fake.requests[0].parts[0]["inlineData"]["data"])
    assert pixels(sent)[0] == (20, 40)
    size, values = pixels(outcome.media[0].data)
    assert size == (20, 16)
    assert all(r > 200 and g < 60 and b < 60 for r, g, b in values)


async def test_heif_input_is_normalised(rig: Rig) -> None:
    pillow_heif.register_heif_opener()
    heif = source(canvas((64, 32), ((0, 0, 64, 32), RED)), "HEIF", "image/heic", quality=100)
    rig.fake.detections = {"asset-0001": detection(1, [0, 0, 500, 250])}
    outcome = await rig.run(["left"], heif)
    assert "(64x32 pixels" in rig.fake.requests[0].prompt
    size, values = pixels(outcome.media[0].data)
    assert size == (16, 16)
    assert all(r > 230 and g < 30 and b < 30 for r, g, b in values)


async def test_webp_and_transparency_survive(rig: Rig) -> None:
    clear = Image.new("RGBA", (10, 10), (0, 0, 0, 0))
    clear.paste((255, 0, 0, 255), (0, 0, 5, 10))
    rig.fake.detections = {"asset-0001": detection(1, [0, 500, 1000, 1000])}
    outcome = await rig.run(["gap"], source(clear, "WEBP", "image/webp", lossless=True))
    crop = Image.open(io.BytesIO(outcome.media[0].data or b""))
    assert (crop.mode, crop.size) == ("RGBA", (5, 10))
    assert set(crop.getchannel("A").get_flattened_data()) == {0}


# -- box normalisation -------------------------------------------------------------------

HALF = [0.0, 0.0, 500.0, 500.0]


@pytest.mark.parametrize(
    ("image_index", "box", "status", "reported", "size"),
    [
        (1, [0, 0, 500, 500], "ok", HALF, (5, 5)),
        (1, [1200, 1100, -50, -10], "ok", [0.0, 0.0, 1000.0, 1000.0], (10, 10)),
        (1, [101, 101, 102.5, 102], "ok", [101.0, 101.0, 102.5, 102.0], (1, 1)),
        (1.0, [0, 0, 500, 500], "ok", HALF, (5, 5)),
        (1, [float("nan"), 0, 500, 500], "missing", None, None),
        (1, [0, 0, float("inf"), 500], "missing", None, None),
        (1, [1100, 0, 1200, 1000], "missing", None, None),
        (1, [100, 100, 100, 500], "missing", None, None),
        (1, [0, 0, 500], "missing", None, None),
        (1, [0, 0, 500, 500, 1], "missing", None, None),
        (1, [True, 0, 500, 500], "missing", None, None),
        (1, ["0", 0, 500, 500], "missing", None, None),
        (1, None, "missing", None, None),
        (5, [0, 0, 500, 500], "missing", HALF, None),
        (None, [0, 0, 500, 500], "missing", HALF, None),
        (True, [0, 0, 500, 500], "missing", HALF, None),
    ],
)
async def test_box_normalisation(
    rig: Rig, image_index: Any, box: Any, status: str, reported: Any, size: Any
) -> None:
    rig.fake.detections = {
        "asset-0001": detection(image_index, box),
        "asset-0002": detection(1, [0, 500, 500, 1000]),  # a sound neighbour is unaffected
    }
    outcome = await rig.run(["target", "neighbour"], source(TEN))
    target, neighbour = outcome.result["assets"]
    assert (target["status"], target["box_2d"], neighbour["status"]) == (status, reported, "ok")
    assert ("unresolved_assets" in outcome.result) is (status != "ok")
    if size is not None:
        assert pixels(outcome.media[0].data)[0] == size


async def test_fenced_json_is_not_salvaged(rig: Rig) -> None:
    body = detections_json([detection(1, RED_BOX, request_id="asset-0001")])
    rig.fake.responder = lambda call: Reply(f"```json\n{body}\n```")
    outcome = await rig.run(["red"])
    assert outcome.result["assets"][0]["status"] == "missing"
    assert outcome.result["error"] == INCOMPLETE_BOXES


@pytest.mark.parametrize("text", ["", "null", "[]", '{"detections": "no"}', '{"detections": [7]}'])
async def test_unusable_replies_are_missing(rig: Rig, text: str) -> None:
    rig.fake.responder = lambda call: Reply(text)
    outcome = await rig.run(["red"])
    assert outcome.summary["assets"][0]["status"] == "missing"


async def test_extractor_reports_incomplete_boxes(rig: Rig) -> None:
    rig.fake.detections = {"asset-0001": detection(4, [0, 0, 500, 500], "logo")}
    endpoint = GeminiEndpoint(KEY, rig.fake.base_url)
    result = await extract_assets(["logo"], [source(TEN)], endpoint, DECODER)
    assert result.error == INCOMPLETE_BOXES
    assert result.assets == [ExtractedAsset("logo", "missing", HALF, 4, "logo", None)]


def test_normalise_box_sorts_and_clamps() -> None:
    assert normalise_box((900, 800, 100, -5)) == [100.0, 0.0, 900.0, 800.0]
    assert normalise_box([0, 0, math.nan, 10]) is None


def test_crop_widens_to_whole_pixels() -> None:
    scene = canvas((200, 100), ((50, 25, 51, 26), RED))
    # x 250.1..255 → 50.02..51.0, y 250..259.9 → 25..25.99: exactly the red pixel.
    assert solid(crop_png(scene, [250, 250.1, 259.9, 255]), (1, 1), RED)
    assert pixels(crop_png(scene, [0, 0, 1000, 1000]))[0] == (200, 100)
    assert pixels(crop_png(scene, [0, 0, 10, 10]))[0] == (2, 1)
