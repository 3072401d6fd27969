"""Prompt assembly: strategy choice and the exact shape of every prompt."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import pytest

from services.agent.convert import STACK_NAMES
from services.agent.domain import FileState, GenerationRequest, HistoryMessage, Prompt
from services.agent.prompts.pipeline import PromptError, build_prompt_messages, select_strategy
from services.agent.prompts.system import (
    ALL_TOOLS,
    BABEL_STANDALONE_URL,
    PERSONA,
    build_system_prompt,
)
from services.agent.prompts.templates import (
    IMAGE_GENERATION_OFF,
    IMAGE_GENERATION_ON,
    asset_id_block,
)
from services.agent.providers.base import PromptMessage

SCREENSHOT = "data:image/png;base64,iVBORw0KGgo="
SCREENSHOT_2 = "data:image/jpeg;base64,/9j/4AAQ"
VIDEO = "data:video/mp4;base64,AAAAIGZ0eXA="
CODE = "<html><body><h1>Hello</h1></body></html>"
DESIGN = "  Primary colour: #0050ff. Radius: 12px.  "
TMP_ID = "tmp_asset_0123456789abcdef01234567"
TMP_ID_2 = "tmp_asset_fedcba9876543210fedcba98"
STACK_LINE = "Selected stack: html_tailwind."
NO_UPDATE_SOURCE = "Update requests require history or fileState.content"
EXPECTED_ON = (
    "Image generation is enabled for this request. "
    "Use generate_images for missing assets when needed."
)
# Upstream's line adds "Do not call generate_images."; ours names no tool that is not offered.
EXPECTED_OFF = (
    "Image generation is disabled for this request. "
    "Use provided media, CSS effects, or placeholder URLs (https://placehold.co)."
)


def make_request(**overrides: Any) -> GenerationRequest:
    return replace(GenerationRequest(generation_id="gen-1"), **overrides)


def create_image(**overrides: Any) -> GenerationRequest:
    return make_request(prompt=Prompt(images=(SCREENSHOT,)), **overrides)


def update_history(*history: HistoryMessage, **overrides: Any) -> GenerationRequest:
    return make_request(generation_type="update", history=history, **overrides)


def update_snapshot(prompt: Prompt, **overrides: Any) -> GenerationRequest:
    return make_request(
        generation_type="update",
        file_state=FileState(path="index.html", content=CODE),
        prompt=prompt,
        **overrides,
    )


def user(text: str, *images: str, videos: tuple[str, ...] = ()) -> HistoryMessage:
    return HistoryMessage(role="user", text=text, images=images, videos=videos)


def assistant(text: str) -> HistoryMessage:
    return HistoryMessage(role="assistant", text=text)


def only_user(messages: list[PromptMessage]) -> PromptMessage:
    assert [message.role for message in messages] == ["system", "user"]
    return messages[1]


# --- strategy -------------------------------------------------------------------------


def test_strategy_selection() -> None:
    assert select_strategy(create_image()) == "create_from_input"
    # History wins over a file snapshot; the snapshot is only for imported code.
    with_both = update_history(user("hi"), file_state=FileState("index.html", CODE))
    assert select_strategy(with_both) == "update_from_history"
    assert select_strategy(update_snapshot(Prompt(text="x"))) == "update_from_file_snapshot"


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (make_request(generation_type="update"), NO_UPDATE_SOURCE),
        (
            make_request(generation_type="update", file_state=FileState("index.html", " \n ")),
            NO_UPDATE_SOURCE,
        ),
        (
            make_request(input_mode="video", prompt=Prompt(images=(SCREENSHOT,))),
            "Video mode requires a video to be provided",
        ),
        (make_request(input_mode=cast(Any, "audio")), "Unsupported input mode: audio"),
        (update_history(assistant(CODE)), "Update history must include at least one user message"),
    ],
)
def test_prompt_errors(request_: GenerationRequest, message: str) -> None:
    with pytest.raises(PromptError) as raised:
        build_prompt_messages(request_)
    assert isinstance(raised.value, ValueError)
    assert str(raised.value) == message


# --- system prompt --------------------------------------------------------------------


def test_system_prompt_persona() -> None:
    assert "You are a coding agent that's an expert at building front-ends." in PERSONA
    assert build_system_prompt().startswith(PERSONA)


TOOLING_PHRASES = """
index.html | `create_file` exactly once | `edit_file` | Never regenerate the whole file
Never put raw HTML in a chat message | `retrieve_option` | 1-based `option_number`
one or two sentences | language the user writes in | Never show code in the chat
`extract_assets` | `generate_images` | `edit_image` | `remove_background` | outerHTML
""".replace("\n", "|").split("|")


@pytest.mark.parametrize("phrase", [phrase.strip() for phrase in TOOLING_PHRASES if phrase.strip()])
def test_system_prompt_covers_tone_tooling_and_images(phrase: str) -> None:
    assert phrase in build_system_prompt()


def test_screenshot_paragraph_only_when_available() -> None:
    with_preview = build_system_prompt(ALL_TOOLS)
    without_preview = build_system_prompt(ALL_TOOLS - {"screenshot_preview"})
    assert "screenshot_preview" in with_preview
    assert "ALWAYS call it once after you create or edit the file" in with_preview
    assert "desktop" in with_preview
    assert "mobile capture" in with_preview
    assert "screenshot_preview" not in without_preview
    no_preview = ALL_TOOLS - {"screenshot_preview"}
    assert build_prompt_messages(create_image(), tools=no_preview)[0].text == without_preview


STACK_RULES: dict[str, tuple[str, ...]] = {
    "tailwind": ('<script src="https://cdn.tailwindcss.com"></script>',),
    "html_css": ("html_css: plain HTML, CSS and JavaScript only. Do not use Tailwind.",),
    "bootstrap": (
        "https://cdn.jsdelivr.net/npm/bootstrap@5.3.2/dist/css/bootstrap.min.css",
        'integrity="sha384-T3c6CoIi6uLrA9TneNEoa7RxnatzjcDSCmG1MXxSR1GAsXEV/Dwwykc2MPK8M2HN"',
    ),
    "react_tailwind": (
        "https://cdn.jsdelivr.net/npm/react@18.0.0/umd/react.development.js",
        "https://cdn.jsdelivr.net/npm/react-dom@18.0.0/umd/react-dom.development.js",
        "https://unpkg.com/@babel/standalone@7.25.6/babel.min.js",
        "Babel 8",
        "cdn.babeljs.io must never be used",
    ),
    "ionic_tailwind": (
        "https://cdn.jsdelivr.net/npm/@ionic/core/dist/ionic/ionic.esm.js",
        '<script nomodule src="https://cdn.jsdelivr.net/npm/@ionic/core/dist/ionic/ionic.js">',
        "https://cdn.jsdelivr.net/npm/@ionic/core/css/ionic.bundle.css",
        "import ionicons from 'https://cdn.jsdelivr.net/npm/ionicons/+esm'",
        "https://cdn.jsdelivr.net/npm/ionicons/dist/esm/ionicons.min.js",
        "icon.min.css",
        "before </body>",
    ),
    "vue_tailwind": (
        "https://registry.npmmirror.com/vue/3.3.11/files/dist/vue.global.js",
        "const { createApp, ref } = Vue;",
        "createApp({ setup() {",
        ".mount('#app')",
    ),
    "all": (
        "Google Fonts",
        "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/5.15.3/css/all.min.css",
        "except on ionic_tailwind",
    ),
}


@pytest.mark.parametrize("rule", sorted(STACK_RULES))
def test_system_prompt_has_each_stack_rule(rule: str) -> None:
    prompt = build_system_prompt()
    for needle in STACK_RULES[rule]:
        assert needle in prompt


def test_system_prompt_names_every_stack() -> None:
    prompt = build_system_prompt()
    assert all(stack in prompt for stack in STACK_NAMES.values())
    assert BABEL_STANDALONE_URL == "https://unpkg.com/@babel/standalone@7.25.6/babel.min.js"
    # placehold.co belongs to the image-generation-off policy only.
    assert "placehold.co" not in prompt


# --- create ---------------------------------------------------------------------------


def test_image_create_shape() -> None:
    message = only_user(build_prompt_messages(create_image()))
    assert (message.images, message.videos) == ((SCREENSHOT,), ())
    assert message.text.startswith(
        "Generate code for a web page that looks exactly like the provided screenshot(s)."
    )
    assert f"\n\n{STACK_LINE}\n\n" in message.text
    for section in ("## Replication instructions", f"- {EXPECTED_ON}", "## Multiple screenshots"):
        assert section in message.text
    assert "Additional instructions" not in message.text
    assert "## Design system" not in message.text
    # With generation off, nothing but the policy line speaks about generate_images.
    off = build_prompt_messages(create_image(image_generation_enabled=False))[1].text
    assert off.count("generate_images") == EXPECTED_OFF.count("generate_images")


def test_image_create_keeps_every_screenshot_and_additional_text() -> None:
    request = make_request(
        stack="bootstrap", prompt=Prompt(text="  Make it dark  ", images=(SCREENSHOT, SCREENSHOT_2))
    )
    message = only_user(build_prompt_messages(request))
    assert message.images == (SCREENSHOT, SCREENSHOT_2)
    assert "Selected stack: bootstrap." in message.text
    assert message.text.endswith("\n\nAdditional instructions: Make it dark")


def test_text_create_is_plain_text() -> None:
    request = make_request(input_mode="text", prompt=Prompt(text="a pricing page"))
    message = only_user(build_prompt_messages(request))
    assert (message.images, message.videos) == ((), ())
    assert message.text.startswith("Generate UI for a pricing page.\n\n")
    assert STACK_LINE in message.text
    assert "# Instructions" in message.text
    assert f"- {EXPECTED_ON}" in message.text
    request = make_request(input_mode="text", prompt=Prompt(text="a todo app."))
    assert "Generate UI for a todo app.\n" in only_user(build_prompt_messages(request)).text


def test_video_create_shape() -> None:
    request = make_request(input_mode="video", prompt=Prompt(text="blue", videos=(VIDEO, VIDEO)))
    messages = build_prompt_messages(request)
    assert "You are a coding agent that's an expert at building front-ends." in messages[0].text
    message = only_user(messages)
    assert (message.images, message.videos) == ((), (VIDEO,))
    assert f"Analyze this video and generate the code.\n\n{STACK_LINE}" in message.text
    assert EXPECTED_ON in message.text
    assert "JavaScript" in message.text
    assert message.text.endswith("\n\nAdditional instructions: blue")


# --- design system --------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["image", "text", "video"])
def test_design_system_follows_the_stack_line_on_create(mode: str) -> None:
    request = make_request(
        input_mode=cast(Any, mode),
        design_system=DESIGN,
        prompt=Prompt(text="shop", images=(SCREENSHOT,), videos=(VIDEO,)),
    )
    text = only_user(build_prompt_messages(request)).text
    assert f"{STACK_LINE}\n\n## Design system\n\n" in text
    assert "<design_system>\nPrimary colour: #0050ff. Radius: 12px.\n</design_system>" in text


def test_design_system_blank_gives_no_block() -> None:
    text = only_user(build_prompt_messages(create_image(design_system="   "))).text
    assert "## Design system" not in text
    assert "<design_system>" not in text


def test_design_system_in_update_prefixes() -> None:
    history = update_history(user("Make the background blue"), design_system=DESIGN)
    snapshot = update_snapshot(Prompt(text="Add a footer"), design_system=DESIGN)
    history_text = build_prompt_messages(history)[1].text
    snapshot_text = build_prompt_messages(snapshot)[1].text
    for text in (history_text, snapshot_text):
        assert text.startswith(f"{STACK_LINE}\n\n{EXPECTED_ON}\n\n## Design system\n\n")
    assert history_text.endswith("\n</design_system>\n\nMake the background blue")
    assert snapshot_text.index("</design_system>") < snapshot_text.index("<current_file")


# --- image generation policy ----------------------------------------------------------


def test_policy_sentences_are_exact() -> None:
    assert IMAGE_GENERATION_ON == EXPECTED_ON
    assert IMAGE_GENERATION_OFF == EXPECTED_OFF


@pytest.mark.parametrize(
    "request_for",
    [
        lambda enabled: create_image(image_generation_enabled=enabled),
        lambda enabled: make_request(
            input_mode="text", prompt=Prompt(text="blog"), image_generation_enabled=enabled
        ),
        lambda enabled: make_request(
            input_mode="video", prompt=Prompt(videos=(VIDEO,)), image_generation_enabled=enabled
        ),
        lambda enabled: update_history(user("x"), image_generation_enabled=enabled),
        lambda enabled: update_snapshot(Prompt(text="x"), image_generation_enabled=enabled),
    ],
    ids=["image", "text", "video", "history", "snapshot"],
)
def test_policy_off_takes_generate_images_out_of_the_system_prompt(request_for: Any) -> None:
    on = build_prompt_messages(request_for(True))
    off = build_prompt_messages(request_for(False))
    assert on[0] == PromptMessage("system", build_system_prompt())
    assert off[0] == PromptMessage("system", build_system_prompt(ALL_TOOLS - {"generate_images"}))
    assert "generate_images" not in off[0].text + off[1].text
    assert EXPECTED_ON in on[1].text
    assert EXPECTED_OFF not in on[1].text
    assert EXPECTED_OFF in off[1].text
    assert EXPECTED_ON not in off[1].text


# --- update from history --------------------------------------------------------------


def test_history_prefix_is_exact() -> None:
    messages = build_prompt_messages(update_history(user("Make the background blue")))
    assert messages[1] == PromptMessage(
        "user",
        "Selected stack: html_tailwind.\n\n"
        "Image generation is enabled for this request. "
        "Use generate_images for missing assets when needed.\n\n"
        "Make the background blue",
    )


def test_history_prefix_with_images_disabled() -> None:
    request = update_history(user("Make it red"), image_generation_enabled=False)
    assert (
        build_prompt_messages(request)[1].text == f"{STACK_LINE}\n\n{EXPECTED_OFF}\n\nMake it red"
    )


def test_history_blank_first_text_sends_only_the_prefix() -> None:
    # Collapsed, a screenshot root replays as its create (test_prompts_versions.py).
    request = update_history(user("  ", SCREENSHOT), assistant(CODE), user("Bigger title"))
    messages = build_prompt_messages(request, collapse_versions=False)
    assert messages[1].text == f"{STACK_LINE}\n\n{EXPECTED_ON}"


def test_history_already_wrapped_assistant_is_not_wrapped_twice() -> None:
    wrapped = f'<file path="index.html">\n{CODE}\n</file>'
    request = update_history(user("x"), assistant(f"  {wrapped}\n"))
    messages = build_prompt_messages(request, collapse_versions=False)
    assert messages[2].text == wrapped


def test_history_prefix_goes_on_the_first_user_message_only() -> None:
    request = update_history(assistant(CODE), user("a"), user("b"))
    messages = build_prompt_messages(request, collapse_versions=False)
    assert messages[1].role == "assistant"
    assert messages[2].text == f"{STACK_LINE}\n\n{EXPECTED_ON}\n\na"
    assert messages[3].text == "b"


@pytest.mark.parametrize("images", [(SCREENSHOT,), (SCREENSHOT, SCREENSHOT_2)])
def test_history_user_images_come_with_the_prefixed_text(images: tuple[str, ...]) -> None:
    request = update_history(user("Match this", *images), assistant(CODE), user("Again", *images))
    messages = build_prompt_messages(request, collapse_versions=False)
    assert messages[1] == PromptMessage(
        "user", f"{STACK_LINE}\n\n{EXPECTED_ON}\n\nMatch this", images=images
    )
    assert messages[3] == PromptMessage("user", "Again", images=images)
    with_video = build_prompt_messages(update_history(user("clone", videos=(VIDEO,))))
    assert (with_video[1].images, with_video[1].videos) == ((), (VIDEO,))


# --- update from file snapshot --------------------------------------------------------


def test_snapshot_shape() -> None:
    request = update_snapshot(Prompt(text="Add a footer", images=(SCREENSHOT,), videos=(VIDEO,)))
    message = only_user(build_prompt_messages(request))
    assert message.images == (SCREENSHOT,)
    assert message.videos == (VIDEO,)
    assert message.text.startswith(f"{STACK_LINE}\n\n{EXPECTED_ON}\n\n")
    assert message.text.endswith(
        f'<current_file path="index.html">\n{CODE}\n</current_file>\n\n'
        "<change_request>\nAdd a footer\n</change_request>"
    )
    elsewhere = replace(request, file_state=FileState(path="app.html", content=CODE))
    assert '<current_file path="app.html">' in build_prompt_messages(elsewhere)[1].text


def test_snapshot_prefers_full_text() -> None:
    full = "Make it red\n\nApply the change to this specific element:\n```html\n<h1>Hi</h1>\n```"
    request = update_snapshot(Prompt(text="Make it red", full_text=full))
    text = only_user(build_prompt_messages(request)).text
    assert f"<change_request>\n{full}\n</change_request>" in text
    assert "<h1>Hi</h1>" in text


def test_snapshot_falls_back_to_text_then_default() -> None:
    with_text = update_snapshot(Prompt(text="Add a footer", full_text="   "))
    blank = update_snapshot(Prompt(text=" ", full_text=""))
    assert "<change_request>\nAdd a footer\n</change_request>" in (
        only_user(build_prompt_messages(with_text)).text
    )
    assert "<change_request>\nApply the requested update.\n</change_request>" in (
        only_user(build_prompt_messages(blank)).text
    )


# --- uploaded image asset ids ---------------------------------------------------------


def test_asset_id_block_content() -> None:
    block = asset_id_block([TMP_ID, TMP_ID_2])
    assert block.startswith("## Uploaded image asset IDs\n")
    assert f"- Image 1: asset_id `{TMP_ID}`" in block
    assert f"- Image 2: asset_id `{TMP_ID_2}`" in block
    for pinned in (
        "Uploaded image asset IDs",
        "asset_id `tmp_asset_",
        "save_assets",
        "asset_ids list",
        "Decide",
        "public_url",
    ):
        assert pinned in block
    for leak in ("/tmp", "screenshot-to-code-assets", "http://", "https://", "local-assets"):
        assert leak not in block
    # An image that could not be staged keeps its number free.
    assert "- Image 2: asset_id" in asset_id_block([None, TMP_ID])
    assert "Image 1" not in asset_id_block([None, TMP_ID])
    assert asset_id_block([]) == ""
    assert asset_id_block([None]) == ""


def test_asset_ids_on_image_create() -> None:
    request = make_request(prompt=Prompt(text="Use my logo", images=(SCREENSHOT, SCREENSHOT_2)))
    ids = {SCREENSHOT: TMP_ID, SCREENSHOT_2: TMP_ID_2}
    message = only_user(build_prompt_messages(request, uploaded_asset_ids=ids))
    assert message.images == (SCREENSHOT, SCREENSHOT_2)
    assert "\n\nAdditional instructions: Use my logo\n\n## Uploaded image asset IDs\n" in (
        message.text
    )
    assert f"- Image 1: asset_id `{TMP_ID}`" in message.text
    assert f"- Image 2: asset_id `{TMP_ID_2}`" in message.text


def test_asset_ids_without_text_and_without_a_match() -> None:
    staged = build_prompt_messages(create_image(), uploaded_asset_ids={SCREENSHOT: TMP_ID})
    assert "Additional instructions: ## Uploaded image asset IDs\n" in staged[1].text
    assert "Uploaded image asset IDs" not in only_user(build_prompt_messages(create_image())).text
    unmatched = build_prompt_messages(create_image(), uploaded_asset_ids={"data:x": TMP_ID})
    assert "Uploaded image asset IDs" not in unmatched[1].text


def test_asset_ids_on_every_history_user_message_with_images() -> None:
    request = update_history(
        user("Clone this", SCREENSHOT),
        assistant(CODE),
        user("Plain follow-up"),
        user("Use this photo", SCREENSHOT_2),
    )
    ids = {SCREENSHOT: TMP_ID, SCREENSHOT_2: TMP_ID_2}
    messages = build_prompt_messages(request, uploaded_asset_ids=ids, collapse_versions=False)
    assert messages[1].text == (
        f"{STACK_LINE}\n\n{EXPECTED_ON}\n\nClone this\n\n{asset_id_block([TMP_ID])}"
    )
    assert TMP_ID not in messages[2].text
    assert messages[3].text == "Plain follow-up"
    assert messages[4].text == f"Use this photo\n\n{asset_id_block([TMP_ID_2])}"
    assert messages[4].images == (SCREENSHOT_2,)


def test_asset_ids_on_blank_history_text() -> None:
    request = update_history(user("", SCREENSHOT))
    messages = build_prompt_messages(request, uploaded_asset_ids={SCREENSHOT: TMP_ID})
    assert messages[1].text == f"{STACK_LINE}\n\n{EXPECTED_ON}\n\n{asset_id_block([TMP_ID])}"


def test_asset_ids_skip_full_text_in_snapshot() -> None:
    ids = {SCREENSHOT: TMP_ID}
    with_full = update_snapshot(Prompt(text="red", full_text="red, selected", images=(SCREENSHOT,)))
    text_only = update_snapshot(Prompt(text="red", images=(SCREENSHOT,)))
    assert TMP_ID not in build_prompt_messages(with_full, uploaded_asset_ids=ids)[1].text
    assert f"<change_request>\nred\n\n{asset_id_block([TMP_ID])}\n</change_request>" in (
        build_prompt_messages(text_only, uploaded_asset_ids=ids)[1].text
    )
