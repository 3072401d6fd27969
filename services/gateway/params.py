"""The upstream params frame → a GenerateCodeRequest, with upstream's exact error texts."""

from __future__ import annotations

from typing import Any

from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2

from services.common.credentials import CREDENTIALS, key_problem
from services.common.page_tags import page_problem, too_many_tags, width_problem
from services.common.project_limits import too_many_files
from services.common.proto_enums import enum_values

STACKS = enum_values(pb.Stack)
INPUT_MODES = {
    "image": pb.INPUT_MODE_IMAGE,
    "video": pb.INPUT_MODE_VIDEO,
    "text": pb.INPUT_MODE_TEXT,
}
GENERATION_TYPES = {"create": pb.GENERATION_TYPE_CREATE, "update": pb.GENERATION_TYPE_UPDATE}


class ParamsError(ValueError):
    """Invalid params; the message is what the browser's `error` frame says."""


# Our extension (docs/browser-protocol.md, "Append-only code"): how a variant's code
# reaches the client. The upstream UI never sends the key, so it keeps whole-file setCodes.
CODE_STREAMS = ("setCode", "append")


def appends_code(params: dict[str, Any]) -> bool:
    """Whether the params (a create's or a resume's) ask for `appendCode` frames.

    An unknown value is refused rather than ignored: a client that asked for appends and
    got whole files would apply them as appends and show a garbled page.
    """
    value = params.get("codeStream")
    if value is None or value == "setCode":
        return False
    if value == "append":
        return True
    shown = f'"{value[:40]}"' if isinstance(value, str) else kind_of(value)
    raise ParamsError(f'Invalid params: codeStream must be "append" or "setCode", got {shown}')


def asks_for_scores(params: dict[str, Any]) -> bool:
    """Whether the params (a create's or a resume's) ask for `fidelity` frames (ours,
    docs/browser-protocol.md): the socket then waits for the scores before it closes.

    The upstream UI never sends the key: it drops `fidelity` frames unseen, so its sockets
    are not scored (unless the operator says so) and close as their variants complete.
    """
    value = params.get("scoreFidelity")
    if value is None or isinstance(value, bool):
        return value is True
    raise ParamsError(f"Invalid params: scoreFidelity must be a boolean, got {kind_of(value)}")


def _show(value: Any) -> str:
    # Upstream formats the offending value with Python's str(); keep the same text.
    return "None" if value is None else str(value)


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _key(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    return value if isinstance(value, str) else ""


def _credentials(params: dict[str, Any]) -> common_pb2.Credentials:
    credentials = common_pb2.Credentials()
    for spec in CREDENTIALS:
        key = _key(params, spec.browser_key)
        base_url = _key(params, spec.browser_base_url) if spec.browser_base_url else ""
        # Paired with the server's key, a client's base URL would send that key to an
        # address the client picked; the agent enforces the rule too, this names the
        # browser's fields.
        if base_url and not key:
            raise ParamsError(
                f"{spec.browser_base_url} needs {spec.browser_key} in the same request"
            )
        problem = key_problem(key)
        if problem is not None:
            raise ParamsError(f"Invalid params: {spec.browser_key} {problem}")
        if key:
            credentials.providers[spec.id].CopyFrom(
                common_pb2.ProviderCredentials(api_key=key, base_url=base_url)
            )
    return credentials


_TYPE_NAMES: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}


def _optional(container: dict[str, Any], name: str, kind: type, prefix: str = "") -> Any:
    """`container[name]` when it has type `kind`; None when missing or null; else ParamsError.

    A value of the wrong type is refused rather than dropped: a generation started from
    what is left would be billed for a request its sender never meant.
    """
    value = container.get(name)
    if value is None or isinstance(value, kind):
        return value
    raise ParamsError(
        f"Invalid params: {prefix}{name} must be {_TYPE_NAMES[kind]}, got {kind_of(value)}"
    )


def kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else _TYPE_NAMES.get(type(value), type(value).__name__)


# What a create needs in each input mode, as (prompt field, what to say when it is empty).
_CREATE_NEEDS = {
    "image": ("images", "an image-mode create needs at least one screenshot"),
    "video": ("videos", "a video-mode create needs a video"),
    "text": ("text", "a text-mode create needs a description of the page"),
}


def _read_prompt(params: dict[str, Any], request: pb.GenerateCodeRequest) -> None:
    prompt = params.get("prompt")
    if not isinstance(prompt, dict):
        shown = "missing" if "prompt" not in params else f"got {kind_of(prompt)}"
        raise ParamsError(
            f"Invalid params: prompt must be an object with text, images and videos ({shown})"
        )
    text = _optional(prompt, "text", str, "prompt.")
    full_text = _optional(prompt, "fullText", str, "prompt.")
    request.prompt.text = text or ""
    if full_text is not None and full_text.strip():
        request.prompt.full_text = full_text
    # Upstream's UI sends the selected element beside fullText (which carries it for the
    # model); the agent checks the update's changes beyond it (docs/fidelity.md).
    selected = _optional(prompt, "selectedElementHtml", str, "prompt.")
    if selected is not None and selected.strip():
        request.prompt.selected_element_html = selected
    # Upstream drops the non-string items of these lists.
    request.prompt.images.extend(_strings(_optional(prompt, "images", list, "prompt.")))
    request.prompt.videos.extend(_strings(_optional(prompt, "videos", list, "prompt.")))
    _read_image_meta(prompt, request)
    if request.generation_type != pb.GENERATION_TYPE_CREATE:
        return
    mode = next(m for m, v in INPUT_MODES.items() if v == request.input_mode)
    field, why = _CREATE_NEEDS[mode]
    given = request.prompt.text.strip() if field == "text" else getattr(request.prompt, field)
    if not given:
        raise ParamsError(f"Invalid params: prompt.{field} is empty: {why}")


def _read_image_meta(prompt: dict[str, Any], request: pb.GenerateCodeRequest) -> None:
    """`prompt.imageMeta`: what each image shows, aligned with `prompt.images`."""
    metas = _optional(prompt, "imageMeta", list, "prompt.")
    if metas is None:
        return
    problem = too_many_tags(len(metas), len(request.prompt.images))
    if problem is not None:
        raise ParamsError(f"Invalid params: prompt.imageMeta: {problem}")
    for i, meta in enumerate(metas):
        name = f"prompt.imageMeta[{i}]"
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise ParamsError(f"Invalid params: {name} must be an object, got {kind_of(meta)}")
        tag = request.prompt.image_meta.add()
        width = meta.get("viewportWidth")
        if width is not None:
            if isinstance(width, bool) or not isinstance(width, int):
                raise ParamsError(
                    f"Invalid params: {name}.viewportWidth must be an integer, got {kind_of(width)}"
                )
            if (problem := width_problem(width)) is not None:
                raise ParamsError(f"Invalid params: {name}.viewportWidth {problem}")
            tag.viewport_width = width
        page = _optional(meta, "page", str, f"{name}.")
        if page:
            if (problem := page_problem(page)) is not None:
                raise ParamsError(f"Invalid params: {name}.page {problem}")
            tag.page = page


def _read_files(params: dict[str, Any], request: pb.GenerateCodeRequest, max_files: int) -> None:
    """`files`: an update's whole project, `{path: content}` (the agent checks paths and
    bytes); more than `max_files` (0: no bound) are refused before any is read."""
    files = _optional(params, "files", dict) or {}
    if max_files and len(files) > max_files:
        raise ParamsError(f"Invalid params: files: {too_many_files(len(files), max_files)}")
    for path, content in files.items():
        if not isinstance(content, str):
            raise ParamsError(
                f"Invalid params: files[{_show(path)}] must be a string, got {kind_of(content)}"
            )
        request.files.append(common_pb2.FileState(path=path, content=content))


def parse_params(params: Any, *, asset_base_url: str, max_files: int = 0) -> pb.GenerateCodeRequest:
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
    credentials = _credentials(params)

    request = pb.GenerateCodeRequest(
        generation_type=GENERATION_TYPES[generation_type],
        input_mode=INPUT_MODES[input_mode],
        stack=STACKS[stack],
        asset_base_url=asset_base_url,
    )
    _read_prompt(params, request)
    history = _optional(params, "history", list)
    for item in history or []:
        # Upstream drops history items that are not objects or have another role.
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
    file_state = _optional(params, "fileState", dict)
    if file_state is not None:
        content = _optional(file_state, "content", str, "fileState.")
        path = _optional(file_state, "path", str, "fileState.")
        if content is not None and content.strip():
            request.file_state.CopyFrom(
                common_pb2.FileState(path=path or "index.html", content=content)
            )
    _read_files(params, request, max_files)
    codes = _optional(params, "optionCodes", list)
    # Upstream: null becomes "" and anything else goes through str().
    request.option_codes.extend("" if c is None else str(c) for c in codes or [])
    request.asset_extraction_enabled = bool(params.get("isAssetExtractionEnabled", True))
    # Upstream quirk kept on purpose: an explicit null disables image generation.
    request.image_generation_enabled = bool(params.get("isImageGenerationEnabled", True))
    design_system = params.get("designSystem")
    if isinstance(design_system, str):
        request.design_system = design_system.strip()
    request.models.extend(_models(params))
    if (rounds := _refine_rounds(params)) is not None:
        request.refine_rounds = rounds
    request.credentials.CopyFrom(credentials)
    return request


# Our extension (docs/browser-protocol.md): how many refinement rounds each option may
# take towards the screenshots; missing: the agent's default. The agent caps it.
MAX_REFINE_ROUNDS = 10


def _refine_rounds(params: dict[str, Any]) -> int | None:
    value = params.get("refineRounds")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REFINE_ROUNDS:
        raise ParamsError(
            f"Invalid params: refineRounds must be a whole number from 0 to {MAX_REFINE_ROUNDS}"
        )
    return value


# Our extension (docs/browser-protocol.md): the models the variants run, as ListModels
# names them. The upstream UI never sends it; the agent checks each id.
MAX_PINNED_MODELS = 8


def _models(params: dict[str, Any]) -> list[str]:
    value = _optional(params, "models", list)
    if value is None:
        return []
    if len(value) > MAX_PINNED_MODELS or not all(isinstance(v, str) and v for v in value):
        raise ParamsError(
            f"Invalid params: models must be a list of at most {MAX_PINNED_MODELS} model ids "
            "(strings, as GET /api/models lists them)"
        )
    return list(value)
