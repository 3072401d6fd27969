"""The upstream params frame → a GenerateCodeRequest, with upstream's exact error texts."""

from __future__ import annotations

from typing import Any

from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2

STACKS = {
    "html_tailwind": pb.STACK_HTML_TAILWIND,
    "html_css": pb.STACK_HTML_CSS,
    "react_tailwind": pb.STACK_REACT_TAILWIND,
    "bootstrap": pb.STACK_BOOTSTRAP,
    "vue_tailwind": pb.STACK_VUE_TAILWIND,
    "ionic_tailwind": pb.STACK_IONIC_TAILWIND,
}
INPUT_MODES = {
    "image": pb.INPUT_MODE_IMAGE,
    "video": pb.INPUT_MODE_VIDEO,
    "text": pb.INPUT_MODE_TEXT,
}
GENERATION_TYPES = {"create": pb.GENERATION_TYPE_CREATE, "update": pb.GENERATION_TYPE_UPDATE}


class ParamsError(ValueError):
    """Invalid params; the message is what the browser's `error` frame says."""


def _show(value: Any) -> str:
    # Upstream formats the offending value with Python's str(); keep the same text.
    return "None" if value is None else str(value)


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _key(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    return value if isinstance(value, str) else ""


def parse_params(params: Any, *, asset_base_url: str) -> pb.GenerateCodeRequest:
    if not isinstance(params, dict):
        raise ParamsError("Invalid params: expected a JSON object")
    stack = params.get("generatedCodeConfig")
    if not isinstance(stack, str) or stack not in STACKS:
        raise ParamsError(f"Invalid generated code config: {_show(stack)}")
    input_mode = params.get("inputMode")
    if not isinstance(input_mode, str) or input_mode not in INPUT_MODES:
        raise ParamsError(f"Invalid input mode: {_show(input_mode)}")
    generation_type = params.get("generationType", "create")
    if not isinstance(generation_type, str) or generation_type not in GENERATION_TYPES:
        raise ParamsError(f"Invalid generation type: {_show(generation_type)}")

    request = pb.GenerateCodeRequest(
        generation_type=GENERATION_TYPES[generation_type],
        input_mode=INPUT_MODES[input_mode],
        stack=STACKS[stack],
        asset_base_url=asset_base_url,
    )
    prompt = params.get("prompt")
    if isinstance(prompt, dict):
        text, full_text = prompt.get("text"), prompt.get("fullText")
        request.prompt.text = text if isinstance(text, str) else ""
        if isinstance(full_text, str) and full_text.strip():
            request.prompt.full_text = full_text
        request.prompt.images.extend(_strings(prompt.get("images")))
        request.prompt.videos.extend(_strings(prompt.get("videos")))
    history = params.get("history")
    for item in history if isinstance(history, list) else []:
        if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
            continue
        text = item.get("text")
        request.history.append(
            pb.HistoryMessage(
                role=pb.ROLE_USER if item["role"] == "user" else pb.ROLE_ASSISTANT,
                text=text if isinstance(text, str) else "",
                images=_strings(item.get("images")),
                videos=_strings(item.get("videos")),
            )
        )
    file_state = params.get("fileState")
    if isinstance(file_state, dict):
        content, path = file_state.get("content"), file_state.get("path")
        if isinstance(content, str) and content.strip():
            request.file_state.CopyFrom(
                common_pb2.FileState(
                    path=path if isinstance(path, str) and path else "index.html",
                    content=content,
                )
            )
    codes = params.get("optionCodes")
    if isinstance(codes, list):
        request.option_codes.extend("" if c is None else str(c) for c in codes)
    request.asset_extraction_enabled = bool(params.get("isAssetExtractionEnabled", True))
    # Upstream quirk kept on purpose: an explicit null disables image generation.
    request.image_generation_enabled = bool(params.get("isImageGenerationEnabled", True))
    design_system = params.get("designSystem")
    if isinstance(design_system, str):
        request.design_system = design_system.strip()
    request.credentials.CopyFrom(
        common_pb2.Credentials(
            openai_api_key=_key(params, "openAiApiKey"),
            openai_base_url=_key(params, "openAiBaseURL"),
            anthropic_api_key=_key(params, "anthropicApiKey"),
            gemini_api_key=_key(params, "geminiApiKey"),
            replicate_api_token=_key(params, "replicateApiKey"),
        )
    )
    return request
