from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf import struct_pb2

from services.tools.definitions import EDIT_IMAGE_ASPECT_RATIOS, TOOL_DEFINITIONS, ToolDefinition

BY_NAME = {d.name: d for d in TOOL_DEFINITIONS}


def schema(name: str) -> dict[str, Any]:
    return BY_NAME[name].input_schema


def test_canonical_order() -> None:
    assert [d.name for d in TOOL_DEFINITIONS] == [
        "create_file",
        "edit_file",
        "generate_images",
        "remove_background",
        "edit_image",
        "extract_assets",
        "screenshot_preview",
        "compare_with_reference",
        "check_accessibility",
        "save_assets",
        "retrieve_option",
    ]


@pytest.mark.parametrize("definition", TOOL_DEFINITIONS, ids=lambda d: d.name)
def test_every_schema_is_an_object_schema_that_fits_a_struct(definition: ToolDefinition) -> None:
    body = definition.input_schema
    assert body["type"] == "object"
    assert isinstance(body["properties"], dict)
    assert set(body.get("required", [])) <= set(body["properties"])
    assert definition.description.strip()
    struct = struct_pb2.Struct()
    struct.update(body)
    assert json.loads(json.dumps(body)) == body


def test_input_schema_is_a_fresh_copy() -> None:
    definition = BY_NAME["create_file"]
    definition.input_schema["properties"].clear()
    assert "content" in definition.input_schema["properties"]


def test_create_file_schema() -> None:
    body = schema("create_file")
    assert body["required"] == ["content"]
    assert body["properties"]["path"]["type"] == "string"
    assert "index.html" in body["properties"]["path"]["description"]
    assert body["properties"]["content"]["type"] == "string"
    description = BY_NAME["create_file"].description
    assert "exactly once" in description
    assert "success message and file metadata" in description


def test_edit_file_schema() -> None:
    body = schema("edit_file")
    assert "required" not in body
    properties = body["properties"]
    assert set(properties) == {"path", "old_text", "new_text", "count", "edits"}
    assert properties["count"]["type"] == "integer"
    assert "-1 for all" in properties["count"]["description"]
    item = properties["edits"]["items"]
    assert properties["edits"]["type"] == "array"
    assert item["required"] == ["old_text", "new_text"]
    assert set(item["properties"]) == {"old_text", "new_text", "count"}
    assert item["properties"]["count"]["type"] == "integer"


def test_edit_file_description_promises_diff_feedback() -> None:
    description = BY_NAME["edit_file"].description
    assert "success message" in description
    assert "unified diff and first changed line" in description


def test_generate_images_schema() -> None:
    body = schema("generate_images")
    assert body["required"] == ["prompts"]
    assert body["properties"]["prompts"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": body["properties"]["prompts"]["description"],
    }
    description = BY_NAME["generate_images"].description
    for phrase in ("detailed prompts", "ethnicity", "hair", "Multiple prompts"):
        assert phrase in description


def test_remove_background_schema() -> None:
    body = schema("remove_background")
    assert body["required"] == ["image_urls"]
    assert body["properties"]["image_urls"]["type"] == "array"
    assert body["properties"]["image_urls"]["items"] == {"type": "string"}


def test_edit_image_schema() -> None:
    body = schema("edit_image")
    assert body["required"] == ["prompt", "image_urls"]
    properties = body["properties"]
    assert "turbo" not in properties
    assert "seed" not in properties
    assert properties["aspect_ratio"]["enum"] == list(EDIT_IMAGE_ASPECT_RATIOS)
    assert properties["aspect_ratio"]["default"] == "match_input_image"
    assert "image 1, image 2" in properties["prompt"]["description"]
    assert "main image first" in properties["image_urls"]["description"]


def test_edit_image_aspect_ratios() -> None:
    assert EDIT_IMAGE_ASPECT_RATIOS == (
        "match_input_image",
        "1:1",
        "16:9",
        "9:16",
        "4:3",
        "3:4",
        "3:2",
        "2:3",
    )


def test_extract_assets_schema_and_pinned_phrases() -> None:
    body = schema("extract_assets")
    assert body["required"] == ["asset_descriptions"]
    descriptions = body["properties"]["asset_descriptions"]
    assert descriptions["type"] == "array"
    item_description = descriptions["items"]["description"]
    for phrase in (
        "distinctive appearance",
        "precise location",
        "nearby UI/context",
        "1-based screenshot number",
        "repeated lookalikes",
        "leftmost vs. rightmost",
    ):
        assert phrase in item_description
    description = BY_NAME["extract_assets"].description
    for phrase in (
        "in request order",
        "permanent, embeddable public_url",
        "attached crop preview",
        "absent or unisolatable",
        "do NOT call save_assets on them",
    ):
        assert phrase in description


def test_screenshot_preview_takes_no_arguments() -> None:
    body = schema("screenshot_preview")
    assert body["properties"] == {}
    assert "required" not in body
    description = BY_NAME["screenshot_preview"].description
    for phrase in ("full-page screenshots", "desktop and mobile", "widths the input", "attached"):
        assert phrase in description


def test_save_assets_schema() -> None:
    body = schema("save_assets")
    assert body["required"] == ["asset_ids"]
    assert body["properties"]["asset_ids"]["type"] == "array"
    description = BY_NAME["save_assets"].description
    assert "Promote one or more uploaded temporary image asset IDs" in description
    assert "before embedding any uploaded image" in description
    assert "permanent public_url" in description


def test_retrieve_option_schema() -> None:
    body = schema("retrieve_option")
    assert body["required"] == ["option_number"]
    assert body["properties"]["option_number"]["type"] == "integer"
    assert "1-based" in body["properties"]["option_number"]["description"]
