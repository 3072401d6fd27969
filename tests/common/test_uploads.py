"""Uploaded images: the data URLs we accept and the id both agent and worker derive."""

from __future__ import annotations

import base64
import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.common.input_images import InputImage, parse_input_image
from services.common.tool_types import ImageTag
from services.common.uploads import (
    MAX_ASSET_BYTES,
    decode_image_data_url,
    parse_data_url,
    upload_id,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"fake png body"


def data_url(data: bytes, content_type: str = "image/png") -> str:
    return f"data:{content_type};base64,{base64.b64encode(data).decode()}"


def test_upload_id_is_the_content_digest() -> None:
    assert upload_id(PNG) == "tmp_asset_" + hashlib.sha256(PNG).hexdigest()[:24]
    assert upload_id(PNG) != upload_id(PNG + b"!")


# -- data URLs ----------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", ["image/png", "image/jpeg", "image/gif", "image/webp"])
def test_supported_data_urls_decode(content_type: str) -> None:
    decoded = decode_image_data_url(data_url(PNG, content_type))
    assert decoded is not None
    assert (decoded.content_type, decoded.data) == (content_type, PNG)


def test_data_url_type_is_case_insensitive() -> None:
    decoded = decode_image_data_url(data_url(PNG, "IMAGE/PNG").replace("data:", "DATA:"))
    assert decoded is not None
    assert decoded.content_type == "image/png"


@pytest.mark.parametrize(
    "url",
    [
        data_url(PNG, "image/svg+xml"),
        data_url(PNG, "text/plain"),
        "data:image/png," + "abc",  # not base64
        "data:image/png;base64,abc",  # bad padding
        "data:image/png;base64,aGVs bG8=",  # whitespace
        "data:image/png;base64,aGVs\nbG8=",
        "data:image/png;base64,aGVs*bG8=",
        "data:image/png;base64,",
        "https://example.com/a.png",
        "",
    ],
)
def test_unacceptable_data_urls(url: str) -> None:
    assert decode_image_data_url(url) is None


def test_size_limit_is_twenty_mib() -> None:
    assert decode_image_data_url(data_url(b"\0" * MAX_ASSET_BYTES)) is not None
    assert decode_image_data_url(data_url(b"\0" * (MAX_ASSET_BYTES + 1))) is None


@given(st.binary(min_size=1, max_size=512))
def test_data_url_round_trip(data: bytes) -> None:
    decoded = decode_image_data_url(data_url(data, "image/webp"))
    assert decoded is not None
    assert decoded.data == data


# -- the one parser, and an input image parsed once ---------------------------------------


def test_parse_data_url_gives_the_type_in_lower_case_and_the_bytes() -> None:
    parsed = parse_data_url(data_url(PNG, "image/PNG"))
    assert (parsed.content_type, parsed.data) == ("image/png", PNG)
    # A video goes through the same parser, with no size bound unless asked.
    assert parse_data_url(data_url(b"\0" * 64, "video/mp4")).data == b"\0" * 64


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://example.com/a.png", "not a data URL"),
        ("data:image/png;base64", "not a data URL"),
        ("data:text/plain,a%20b", "not a base64 data URL"),
        ("data:image/png;base64,aGVs bG8=", "invalid base64"),
        ("data:image/png;base64,", "empty"),
    ],
)
def test_parse_data_url_says_why_a_url_is_not_one(url: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_data_url(url)


def test_an_input_image_carries_its_hash_size_tag_and_upload_id() -> None:
    png = base64.b64decode(  # 2×3 pixels
        "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAE0lEQVR4nGP8z8DAwMDAxIBMAQAUQAEF3SN5DgAAAABJRU5ErkJggg=="
    )
    tag = ImageTag("pricing.html", 390)
    image = parse_input_image(data_url(png), tag)
    assert image == InputImage("image/png", png, hashlib.sha256(png).hexdigest(), 2, 3, tag)
    assert image.upload_id == upload_id(png)
    with pytest.raises(ValueError, match="not an image data URL"):
        parse_input_image(data_url(png, "text/plain"))
