"""The prompt names exactly the tools the model is offered (issue 15, item 7).

Without a Replicate key there is no generate_images, remove_background or edit_image;
without a Gemini key no extract_assets; without Chromium no screenshot_preview. Every
message of every prompt strategy is searched for every canonical tool name.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from typing import Any

import pytest

from services.agent.domain import FileState, GenerationRequest, HistoryMessage, Prompt
from services.agent.prompts.pipeline import build_prompt_messages
from services.agent.prompts.system import ALL_TOOLS
from services.agent.prompts.templates import (
    IMAGE_GENERATION_OFF,
    IMAGE_GENERATION_ON,
    IMAGE_GENERATION_UNAVAILABLE,
)
from services.agent.providers.base import PromptMessage
from services.tools.definitions import TOOL_DEFINITIONS

SCREENSHOT = "data:image/png;base64,iVBORw0KGgo="
VIDEO = "data:video/mp4;base64,AAAAIGZ0eXA="
CODE = "<html><body><h1>Hello</h1></body></html>"
UPLOADS = {SCREENSHOT: "tmp_asset_0123456789abcdef01234567"}
CANONICAL = frozenset(d.name for d in TOOL_DEFINITIONS)
ALWAYS = frozenset({"create_file", "edit_file", "retrieve_option", "save_assets"})
REPLICATE = frozenset({"generate_images", "remove_background", "edit_image"})
OPTIONAL = (*sorted(REPLICATE), "extract_assets", "screenshot_preview")
SUBSETS = [
    frozenset(combo)
    for n in range(len(OPTIONAL) + 1)
    for combo in itertools.combinations(OPTIONAL, n)
]
_NAME = re.compile(r"\b(" + "|".join(sorted(CANONICAL)) + r")\b")


def make(**fields: Any) -> GenerationRequest:
    return replace(GenerationRequest(generation_id="gen-1"), **fields)


def user(text: str, *images: str) -> HistoryMessage:
    return HistoryMessage("user", text, images=images)


# (request, whether an uploaded image gets its asset-id block, which names save_assets)
REQUESTS: dict[str, tuple[GenerationRequest, bool]] = {
    "image": (make(prompt=Prompt(text="Use my logo", images=(SCREENSHOT,))), True),
    "text": (make(input_mode="text", prompt=Prompt(text="a bakery landing page")), False),
    "video": (make(input_mode="video", prompt=Prompt(videos=(VIDEO,))), False),
    "history": (
        make(
            generation_type="update",
            history=(user("A page", SCREENSHOT), HistoryMessage("assistant", CODE), user("Blue")),
        ),
        True,
    ),
    "snapshot": (
        make(
            generation_type="update",
            file_state=FileState("index.html", CODE),
            prompt=Prompt(text="Make it blue"),
        ),
        False,
    ),
}


def mentioned(messages: list[PromptMessage]) -> set[str]:
    return {name for message in messages for name in _NAME.findall(message.text)}


def test_the_prompt_knows_every_canonical_tool() -> None:
    assert ALL_TOOLS == CANONICAL


@pytest.mark.parametrize("kind", sorted(REQUESTS))
@pytest.mark.parametrize("optional", SUBSETS, ids=lambda s: "+".join(sorted(s)) or "none")
def test_the_prompt_mentions_exactly_the_offered_tools(kind: str, optional: frozenset[str]) -> None:
    request, uploads_named = REQUESTS[kind]
    offered = ALWAYS | optional
    messages = build_prompt_messages(request, tools=offered, uploaded_asset_ids=UPLOADS)
    # save_assets is only spoken of next to an uploaded image's asset id.
    expected = offered if uploads_named else offered - {"save_assets"}
    assert mentioned(messages) == expected


@pytest.mark.parametrize("kind", sorted(REQUESTS))
def test_without_a_replicate_key_no_image_tool_is_mentioned(kind: str) -> None:
    request, _ = REQUESTS[kind]
    offered = ALWAYS | {"extract_assets", "screenshot_preview"}
    messages = build_prompt_messages(request, tools=offered, uploaded_asset_ids=UPLOADS)
    assert not mentioned(messages) & REPLICATE
    # Generation is on in the request, but there is nothing to generate with.
    assert any(IMAGE_GENERATION_UNAVAILABLE in m.text for m in messages)
    assert not any(IMAGE_GENERATION_ON in m.text for m in messages)


@pytest.mark.parametrize("kind", sorted(REQUESTS))
def test_without_a_gemini_key_extract_assets_is_not_mentioned(kind: str) -> None:
    request, _ = REQUESTS[kind]
    offered = ALWAYS | REPLICATE | {"screenshot_preview"}
    names = mentioned(build_prompt_messages(request, tools=offered))
    assert "extract_assets" not in names
    assert names >= REPLICATE


@pytest.mark.parametrize("kind", sorted(REQUESTS))
def test_without_chromium_screenshot_preview_is_not_mentioned(kind: str) -> None:
    request, _ = REQUESTS[kind]
    offered = ALWAYS | REPLICATE | {"extract_assets"}
    messages = build_prompt_messages(request, tools=offered)
    assert "screenshot_preview" not in mentioned(messages)
    assert "# Checking your work" not in messages[0].text


def test_generation_off_names_no_generator_even_if_one_is_offered() -> None:
    request = replace(REQUESTS["image"][0], image_generation_enabled=False)
    messages = build_prompt_messages(request, tools=ALL_TOOLS)
    assert "generate_images" not in mentioned(messages)
    assert f"- {IMAGE_GENERATION_OFF}" in messages[1].text


def test_only_remove_background_still_explains_transparency() -> None:
    messages = build_prompt_messages(REQUESTS["text"][0], tools=ALWAYS | {"remove_background"})
    system = messages[0].text
    assert "# Images\n- When an image needs a transparent background, pass it to " in system
    assert "cannot produce transparent pixels" not in system


def test_no_image_tool_means_no_images_section() -> None:
    messages = build_prompt_messages(REQUESTS["image"][0], tools=ALWAYS)
    assert "# Images" not in messages[0].text
    replication = messages[1].text.split("## Replication instructions\n")[1].split("\n\n")[0]
    assert replication == (
        "- Match the screenshot exactly, and use exactly the text it shows.\n"
        f"- {IMAGE_GENERATION_UNAVAILABLE}"
    )


@pytest.mark.parametrize("kind", sorted(REQUESTS))
def test_text_mode_names_no_tool_and_asks_for_one_fenced_page(kind: str) -> None:
    request, _ = REQUESTS[kind]
    messages = build_prompt_messages(
        request, tools=ALL_TOOLS, uploaded_asset_ids=UPLOADS, text_mode=True
    )
    assert mentioned(messages) == set()
    system = messages[0].text
    assert "one fenced code block that starts with ```html" in system
    assert "# Checking your work" not in system
    # What the model works from is all there: an update's current page, the inputs.
    if kind in ("history", "snapshot"):
        assert any(CODE in m.text for m in messages[1:])
    with_tools = build_prompt_messages(request, tools=ALL_TOOLS, uploaded_asset_ids=UPLOADS)
    assert [m.images for m in messages] == [m.images for m in with_tools]
