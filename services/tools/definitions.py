"""The canonical definitions of every tool the agent can be offered, in canonical order.

Providers serialise these into their own tool formats; the tool service lists them.
Several description phrases are relied on by the model's behaviour and pinned by tests,
so reword with care.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

EDIT_IMAGE_ASPECT_RATIOS: tuple[str, ...] = (
    "match_input_image",
    "1:1",
    "16:9",
    "9:16",
    "4:3",
    "3:4",
    "3:2",
    "2:3",
)


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as offered to a model.

    The schema is kept as canonical JSON text so the shared definitions cannot be
    mutated by a caller; `input_schema` hands out a fresh dict each time.
    """

    name: str
    description: str
    schema_json: str

    @classmethod
    def of(cls, name: str, description: str, input_schema: dict[str, Any]) -> ToolDefinition:
        return cls(name, description, json.dumps(input_schema, sort_keys=True))

    @property
    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = json.loads(self.schema_json)
        return schema


def _string_list(description: str, item_description: str | None = None) -> dict[str, Any]:
    items: dict[str, Any] = {"type": "string"}
    if item_description is not None:
        items["description"] = item_description
    return {"type": "array", "items": items, "description": description}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


_CREATE_FILE = ToolDefinition.of(
    "create_file",
    "Create the main HTML file for the app, holding the complete page in one document. "
    "Use it exactly once for the first version; calling it again replaces the whole file, "
    "so prefer edit_file for later changes. Returns a success message and file metadata.",
    _object(
        {
            "path": {
                "type": "string",
                "description": (
                    "Path of the file. Use index.html if unsure; a site of several pages "
                    "has one .html file per page and may share .css and .js files."
                ),
            },
            "content": {"type": "string", "description": "The full HTML document."},
        },
        ["content"],
    ),
)


def _edit_item() -> dict[str, Any]:
    return _object(
        {
            "old_text": {
                "type": "string",
                "description": "Exact text to find in the current file.",
            },
            "new_text": {"type": "string", "description": "Text to put in its place."},
            "count": {
                "type": "integer",
                "description": "How many occurrences to replace: omit for the first, -1 for all.",
            },
        },
        ["old_text", "new_text"],
    )


_EDIT_FILE = ToolDefinition.of(
    "edit_file",
    "Change the existing file by replacing exact text. old_text must match the current file "
    "character for character, whitespace and indentation included; quote enough surrounding "
    "lines to make it unique. Give one change with old_text/new_text, or several in edits: "
    "they apply in order, and if any of them fails nothing is changed. Returns a success "
    "message with a unified diff and first changed line of the edited file.",
    _object(
        {
            "path": {
                "type": "string",
                "description": "Path of the file to change; omit it for the current file.",
            },
            "old_text": _edit_item()["properties"]["old_text"],
            "new_text": _edit_item()["properties"]["new_text"],
            "count": {
                "type": "integer",
                "description": "Occurrences to replace: omit for the first only, -1 for all.",
            },
            "edits": {
                "type": "array",
                "items": _edit_item(),
                "description": "Several replacements, applied in order as one atomic change.",
            },
        }
    ),
)


def _list_tool(name: str, description: str, argument: str, about: str) -> ToolDefinition:
    """A tool whose one argument is a required list of strings."""
    return ToolDefinition.of(
        name, description, _object({argument: _string_list(about)}, [argument])
    )


_GENERATE_IMAGES = _list_tool(
    "generate_images",
    "Generate images from text prompts: photos, illustrations, backgrounds or anything else "
    "the page needs that the inputs do not provide. Write detailed prompts covering subject, "
    "composition, style, lighting and colours; for people, describe their appearance "
    "(ethnicity, age, hair, clothing, expression). Multiple prompts may be passed in one "
    "call to make several images at once. Returns an image URL for each prompt.",
    "prompts",
    "One detailed prompt per image.",
)

_REMOVE_BACKGROUND = _list_tool(
    "remove_background",
    "Remove the background from one or more images and get a transparent PNG for each, "
    "e.g. for product shots, logos or cut-out people placed on the page's own background. "
    "Returns a result URL per input image.",
    "image_urls",
    "URLs of the images to process.",
)

_EDIT_IMAGE = ToolDefinition.of(
    "edit_image",
    "Edit an image, or combine several, following a written instruction: change colours, "
    "remove or add objects, restyle, or place a product into a new scene. The first URL is "
    "the main image and any others are references. Returns the URL of the edited image.",
    _object(
        {
            "prompt": {
                "type": "string",
                "description": "The change to make. Refer to the inputs as image 1, image 2, "
                "… in the order they are given.",
            },
            "image_urls": _string_list("Input image URLs, main image first, then references."),
            "aspect_ratio": {
                "type": "string",
                "enum": list(EDIT_IMAGE_ASPECT_RATIOS),
                "default": "match_input_image",
                "description": "Aspect ratio of the output; match_input_image keeps the main "
                "image's.",
            },
        },
        ["prompt", "image_urls"],
    ),
)

_EXTRACT_ASSETS = ToolDefinition.of(
    "extract_assets",
    "Cut visual assets (logos, icons, photos, illustrations) out of the input screenshots so "
    "the page can use the real pixels instead of placeholders. Ask for each wanted asset as "
    "its own item. Results come back in request order: each found asset has a permanent, "
    "embeddable public_url and an attached crop preview to check. Items that are absent or "
    "unisolatable come back unresolved; recreate or replace those. The URLs are already "
    "permanent, so do NOT call save_assets on them.",
    _object(
        {
            "asset_descriptions": _string_list(
                "The assets to extract, one item per occurrence.",
                "One occurrence of one asset: its distinctive appearance, its precise location "
                "on the screen, nearby UI/context, and the 1-based screenshot number when there "
                "are several screenshots. Give repeated lookalikes separate items and tell them "
                "apart by position (leftmost vs. rightmost, first vs. second row).",
            )
        },
        ["asset_descriptions"],
    ),
)

_SCREENSHOT_PREVIEW = ToolDefinition.of(
    "screenshot_preview",
    "Render the current page and return full-page screenshots as attached images (desktop "
    "and mobile, or the widths the input screenshots were taken at). Use it after creating "
    "the file or after substantial edits to check the layout and visual fidelity, then fix "
    "whatever looks wrong.",
    _object({}),
)

_COMPARE_WITH_REFERENCE = ToolDefinition.of(
    "compare_with_reference",
    "Render the current page at the width its screenshot was taken at and compare the two: returns "
    "scores from 0 to 1 (block_match, text, position, color, visual), the screenshot's text "
    "blocks the page reproduces worst (box, expected text, the page's text, the issue) and an "
    "attached image with the screenshot left and the page right. Use it after building the "
    "page from a screenshot, then fix the listed differences.",
    _object(
        {
            "image_number": {
                "type": "integer",
                "description": (
                    "1-based number of the input image to compare with (default: the first "
                    "screenshot of the current page, else 1)."
                ),
            }
        }
    ),
)

_CHECK_ACCESSIBILITY = ToolDefinition.of(
    "check_accessibility",
    "Check the current page for accessibility problems with axe-core (WCAG 2.x A and AA): "
    "returns a score from 0 to 1 (1 = no violation) and each violated rule with its impact "
    "and the offending elements (selector, HTML). Use it once the page is written, then fix "
    "what it lists (contrast, alt text, labels, button names, landmarks) without changing "
    "how the page looks.",
    _object(
        {
            "viewport_width": {
                "type": "integer",
                "description": (
                    "Width in CSS pixels to check at, 320-1920 (default: the width the first "
                    "screenshot was taken at, else 1280)."
                ),
            }
        }
    ),
)

_SAVE_ASSETS = ToolDefinition.of(
    "save_assets",
    "Promote one or more uploaded temporary image asset IDs (tmp_asset_…) to permanent URLs. "
    "Call this before embedding any uploaded image in the code. Returns permanent public_url "
    "values, one per ID, to use in the page.",
    _object(
        {"asset_ids": _string_list("Temporary asset IDs of uploaded images.")},
        ["asset_ids"],
    ),
)

_RETRIEVE_OPTION = ToolDefinition.of(
    "retrieve_option",
    "Fetch the full code of one of the options generated for the previous version, for "
    "example when the user wants to build on option 2. Returns that option's code.",
    _object(
        {"option_number": {"type": "integer", "description": "1-based option number."}},
        ["option_number"],
    ),
)

TOOL_DEFINITIONS: tuple[ToolDefinition, ...] = (
    _CREATE_FILE,
    _EDIT_FILE,
    _GENERATE_IMAGES,
    _REMOVE_BACKGROUND,
    _EDIT_IMAGE,
    _EXTRACT_ASSETS,
    _SCREENSHOT_PREVIEW,
    _COMPARE_WITH_REFERENCE,
    _CHECK_ACCESSIBILITY,
    _SAVE_ASSETS,
    _RETRIEVE_OPTION,
)
