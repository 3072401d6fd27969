"""The upstream params frame → GenerateCodeRequest."""

from __future__ import annotations

from typing import Any

import pytest
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2

from services.gateway.params import ParamsError, parse_params
from tests.suite import create_params


def parse(**overrides: Any) -> pb.GenerateCodeRequest:
    return parse_params(create_params(**overrides), asset_base_url="http://h:7001")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"generatedCodeConfig": "svelte"}, "Invalid generated code config: svelte"),
        ({"generatedCodeConfig": None}, "Invalid generated code config: None"),
        ({"inputMode": "audio"}, "Invalid input mode: audio"),
        ({"generationType": "remove"}, "Invalid generation type: remove"),
    ],
)
def test_upstream_error_texts(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ParamsError) as caught:
        parse(**overrides)
    assert str(caught.value) == message


def test_not_an_object() -> None:
    with pytest.raises(ParamsError, match="expected a JSON object"):
        parse_params([1, 2], asset_base_url="")


def test_defaults_and_quirks() -> None:
    request = parse_params(
        {"generatedCodeConfig": "react_tailwind", "inputMode": "text", "prompt": {"text": "a"}},
        asset_base_url="x",
    )
    assert request.generation_type == pb.GENERATION_TYPE_CREATE
    assert request.stack == pb.STACK_REACT_TAILWIND
    assert request.asset_extraction_enabled is True
    assert request.image_generation_enabled is True
    # Upstream: an explicit null disables image generation.
    assert parse(isImageGenerationEnabled=None).image_generation_enabled is False
    assert parse(isAssetExtractionEnabled=False).asset_extraction_enabled is False


def test_history_file_state_option_codes_and_keys() -> None:
    request = parse(
        generationType="update",
        history=[
            {"role": "user", "text": "make it", "images": ["data:image/png;base64,AA", 3]},
            {"role": "system", "text": "dropped"},
            "not an object",
            {"role": "assistant", "text": 42},
        ],
        fileState={"path": "", "content": "<html></html>"},
        optionCodes=["<a>", None, 7],
        prompt={"text": "t", "fullText": "  ", "images": [None, "data:image/png;base64,AA"]},
        designSystem="  tokens  ",
        openAiApiKey="sk-browser",
        anthropicApiKey=None,
        openAiBaseURL="http://127.0.0.1:1/v1",
    )
    assert [(h.role, h.text, list(h.images)) for h in request.history] == [
        (pb.ROLE_USER, "make it", ["data:image/png;base64,AA"]),
        (pb.ROLE_ASSISTANT, "", []),
    ]
    assert request.file_state.path == "index.html"
    assert list(request.option_codes) == ["<a>", "", "7"]
    assert request.prompt.full_text == ""
    assert list(request.prompt.images) == ["data:image/png;base64,AA"]
    assert request.design_system == "tokens"
    assert dict(request.credentials.providers) == {
        "openai": common_pb2.ProviderCredentials(
            api_key="sk-browser", base_url="http://127.0.0.1:1/v1"
        )
    }
    assert request.asset_base_url == "http://h:7001"


def test_blank_file_state_is_ignored() -> None:
    assert not parse(fileState={"path": "a.html", "content": "   "}).HasField("file_state")


IMAGE = create_params()["prompt"]["images"][0]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"prompt": "a page"},
            "prompt must be an object with text, images and videos (got a string)",
        ),
        ({"prompt": 7}, "prompt must be an object with text, images and videos (got a number)"),
        ({"prompt": [IMAGE]}, "prompt must be an object with text, images and videos (got a list)"),
        ({"prompt": None}, "prompt must be an object with text, images and videos (got null)"),
        ({"prompt": {"text": 5, "images": [IMAGE]}}, "prompt.text must be a string, got a number"),
        ({"prompt": {"text": "", "images": IMAGE}}, "prompt.images must be a list, got a string"),
        (
            {"prompt": {"images": [IMAGE], "videos": {}}},
            "prompt.videos must be a list, got an object",
        ),
        ({"history": {"role": "user"}}, "history must be a list, got an object"),
        ({"history": "make it blue"}, "history must be a list, got a string"),
        ({"optionCodes": "<html>"}, "optionCodes must be a list, got a string"),
        ({"fileState": "<html>"}, "fileState must be an object, got a string"),
        ({"fileState": {"content": 3}}, "fileState.content must be a string, got a number"),
        ({"prompt": {"text": "", "images": [], "videos": []}}, "prompt.images is empty"),
        ({"prompt": {"text": "a page", "images": [7, None]}}, "prompt.images is empty"),
        ({"inputMode": "text", "prompt": {"text": "  ", "images": []}}, "prompt.text is empty"),
        (
            {"inputMode": "video", "prompt": {"text": "x", "images": [IMAGE]}},
            "prompt.videos is empty",
        ),
        ({"files": ["index.html"]}, "files must be an object, got a list"),
        ({"files": {"index.html": None}}, "files[index.html] must be a string, got null"),
    ],
)
def test_wrong_types_and_no_usable_input_name_the_field(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ParamsError) as caught:
        parse_params(create_params(**overrides), asset_base_url="")
    assert str(caught.value).startswith("Invalid params: " + message)


def test_a_missing_prompt_is_refused() -> None:
    params = create_params()
    del params["prompt"]
    with pytest.raises(ParamsError, match=r"prompt must be an object .*\(missing\)"):
        parse_params(params, asset_base_url="")


def test_every_upstream_shape_is_accepted() -> None:
    text = parse(inputMode="text", prompt={"text": "A blog", "images": [], "videos": []})
    assert text.prompt.text == "A blog"
    video = parse(
        inputMode="video",
        prompt={"text": "", "images": [], "videos": ["data:video/mp4;base64,AAAA"]},
        isAssetExtractionEnabled=False,
    )
    assert list(video.prompt.videos) == ["data:video/mp4;base64,AAAA"]
    # An update: the instruction is in the history; the prompt may carry no media.
    update = parse(
        generationType="update",
        prompt={"text": "bluer", "images": [], "videos": [], "fullText": None},
        history=[{"role": "user", "text": "bluer", "images": [], "videos": []}],
        fileState=None,
        optionCodes=None,
    )
    assert [h.text for h in update.history] == ["bluer"]
    assert not update.option_codes


def test_the_selected_element_reaches_the_agent_beside_the_instruction() -> None:
    element = '<h1 id="t">Hi</h1>'
    update = parse(
        generationType="update",
        prompt={
            "text": "bigger",
            "fullText": f"bigger referring to this element specifically: {element}",
            "selectedElementHtml": element,
            "images": [],
        },
        history=[{"role": "user", "text": "bigger", "images": []}],
    )
    assert update.prompt.selected_element_html == element
    assert update.prompt.full_text.endswith(element)
    blank = {"text": "t", "selectedElementHtml": " "}
    assert not parse(inputMode="text", prompt=blank).prompt.selected_element_html
    with pytest.raises(ParamsError, match=r"^Invalid params: prompt.selectedElementHtml must be"):
        parse(inputMode="text", prompt={"text": "t", "selectedElementHtml": 3})


def test_every_upstream_key_param_reaches_its_credential_source() -> None:
    request = parse(
        openAiApiKey="o", anthropicApiKey="a", geminiApiKey="g", replicateApiKey="r", x=1
    )
    keys = {source: entry.api_key for source, entry in request.credentials.providers.items()}
    assert keys == {"openai": "o", "anthropic": "a", "gemini": "g", "replicate": "r"}
    assert parse(geminiApiKey=7, openAiApiKey="").credentials.providers == {}


def test_a_base_url_without_its_key_is_refused_with_upstream_names() -> None:
    with pytest.raises(
        ParamsError, match=r"^openAiBaseURL needs openAiApiKey in the same request$"
    ):
        parse(openAiBaseURL="http://127.0.0.1:9/v1", anthropicApiKey="a")


def test_an_updates_project_keeps_its_files_in_order() -> None:
    files = {"index.html": "<p>home</p>", "css/site.css": "p {}"}
    request = parse(generationType="update", files=files)
    assert [(f.path, f.content) for f in request.files] == list(files.items())
    assert not parse().files


def test_refine_rounds_reach_the_request_or_are_left_to_the_agent() -> None:
    assert not parse().HasField("refine_rounds")
    assert parse(refineRounds=None).HasField("refine_rounds") is False
    for rounds in (0, 2):
        request = parse(refineRounds=rounds)
        assert request.HasField("refine_rounds")
        assert request.refine_rounds == rounds
    for bad in (-1, 11, 1.5, True, "2"):
        with pytest.raises(ParamsError, match="refineRounds must be a whole number from 0 to 10"):
            parse(refineRounds=bad)
