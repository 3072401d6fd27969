"""Tool arguments: their JSON schemas (pydantic) and their translation into agent requests.

The SDK validates each call against these models first (a wrong type comes back as an
`isError` result naming the field); what a schema cannot say (a screenshot needs exactly
one source, a file must exist) is checked here and raised as `ToolError` naming the field
the way the schema spells it, e.g. `screenshots[1].image`.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Annotated, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ConfigDict, Field
from s2c.agent.v1 import agent_service_pb2 as pb

from services.common.image_headers import sniff

Stack = Literal[
    "html_tailwind", "html_css", "react_tailwind", "bootstrap", "vue_tailwind", "ionic_tailwind"
]
STACKS: dict[str, int] = {
    "html_tailwind": pb.STACK_HTML_TAILWIND,
    "html_css": pb.STACK_HTML_CSS,
    "react_tailwind": pb.STACK_REACT_TAILWIND,
    "bootstrap": pb.STACK_BOOTSTRAP,
    "vue_tailwind": pb.STACK_VUE_TAILWIND,
    "ionic_tailwind": pb.STACK_IONIC_TAILWIND,
}
Options = Annotated[
    int,
    Field(
        ge=0,
        le=8,
        description="How many alternative pages (options) to build; 0 lets the agent "
        "choose (4 for a new page, 2 for an update).",
    ),
]
Models = Annotated[
    list[str],
    Field(
        max_length=8,
        description="Pin the models by id (see list_models), cycled over the options; "
        "empty: the suite chooses by the keys it has.",
    ),
]
Stacks = Annotated[
    Stack, Field(description="The technology of the page (default HTML with Tailwind).")
]


class Screenshot(BaseModel):
    """One input screenshot: exactly one of `image` or `data`, and optional tags."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    image: str | None = Field(
        None,
        description="A data URL (data:image/png;base64,...), an https URL, or (stdio "
        "server only) a path to a png, jpeg, webp or gif file.",
    )
    data: str | None = Field(
        None, description="Base64 image bytes, as in an MCP image content; with mimeType."
    )
    mime_type: str | None = Field(None, alias="mimeType", description="MIME type of `data`.")
    page: str = Field(
        "",
        max_length=64,
        description="Which page this screenshot shows, as a file stem ('index', 'pricing'); "
        "screenshots of different pages build a small linked site.",
    )
    width: int | None = Field(
        None,
        ge=240,
        le=3840,
        description="Viewport width (CSS px) it was taken at; several widths of one page "
        "ask for one responsive page.",
    )


def image_url(shot: Screenshot, index: int, read_files: bool) -> str:
    """The screenshot as the agent takes it: a data URL or an https URL."""
    where = f"screenshots[{index}]"
    if (shot.image is None) == (shot.data is None):
        raise ToolError(f"{where}: give exactly one of `image` or `data`")
    if shot.data is not None:
        try:
            raw = base64.b64decode(shot.data, validate=True)
        except (binascii.Error, ValueError):
            raise ToolError(f"{where}.data: not valid base64") from None
        return f"data:{_mime(raw, f'{where}.data')};base64,{shot.data}"
    text = (shot.image or "").strip()
    if text.startswith(("data:", "https://")):
        return text
    if text.startswith("http://"):
        raise ToolError(
            f"{where}.image: only https URLs (or a data URL); to capture a page, use `url`"
        )
    if not read_files:
        raise ToolError(
            f"{where}.image: file paths are read only by the local stdio server (s2c mcp); "
            "over HTTP send a data URL or `data` + `mimeType`"
        )
    path = Path(text).expanduser()
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ToolError(f"{where}.image: cannot read {text!r}: {exc.strerror}") from None
    mime = _mime(raw, f"{where}.image")
    return f"data:{mime};base64,{base64.b64encode(raw).decode('ascii')}"


def _mime(raw: bytes, where: str) -> str:
    kind = sniff(raw)
    if kind is None or kind == "HEIF":
        raise ToolError(f"{where}: not a png, jpeg, webp or gif image")
    return f"image/{kind.lower()}"


def add_screenshot(request: pb.GenerateCodeRequest, url: str, shot: Screenshot | None) -> None:
    request.prompt.images.append(url)
    meta = request.prompt.image_meta.add()
    if shot is not None:
        meta.page = shot.page
        if shot.width is not None:
            meta.viewport_width = shot.width


def create_request(
    *,
    prompt: str,
    stack: str,
    options: int,
    models: list[str],
    images: list[tuple[str, Screenshot | None]],
) -> pb.GenerateCodeRequest:
    """A create from screenshots (each with its tags) or, with none, from the text."""
    if not images and not prompt.strip():
        raise ToolError("prompt: give a text prompt, `screenshots` or a `url` to capture")
    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_CREATE,
        stack=STACKS[stack],  # type: ignore[arg-type]
        variant_count=options,
        models=models,
    )
    request.prompt.text = prompt
    if images:
        request.input_mode = pb.INPUT_MODE_IMAGE
        for url, shot in images:
            add_screenshot(request, url, shot)
        if not any(m.page or m.HasField("viewport_width") for m in request.prompt.image_meta):
            del request.prompt.image_meta[:]  # untagged: the one page, as before
    else:
        request.input_mode = pb.INPUT_MODE_TEXT
    return request


def update_request(
    record: pb.Generation,
    option: int,
    instruction: str,
    selected_element: str,
    stack: str,
    options: int,
) -> pb.GenerateCodeRequest:
    """An update of one option of a finished generation, from its run record's files."""
    if not instruction.strip():
        raise ToolError("instruction: say what to change")
    variants = {v.variant_index: v for v in record.variants}
    variant = variants.get(option)
    if variant is None:
        raise ToolError(
            f"option: generation {record.generation_id} has options 0 to {len(variants) - 1}"
        )
    if not variant.files and not variant.code:
        raise ToolError(f"option: option {option} wrote no page ({variant.error or 'no code'})")
    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_UPDATE,
        input_mode=pb.INPUT_MODE_TEXT,
        stack=STACKS[stack],  # type: ignore[arg-type]
        variant_count=options,
    )
    request.prompt.text = instruction
    if selected_element.strip():
        request.prompt.full_text = (
            f"{instruction}\n\nMake the change to this element of the page:\n{selected_element}"
        )
        # Also on its own: the agent checks what the update changes beyond it.
        request.prompt.selected_element_html = selected_element
    entry = variant.code or variant.files[0].content
    request.history.add(role=pb.ROLE_ASSISTANT, text=entry)
    request.history.add(role=pb.ROLE_USER, text=instruction)
    if len(variant.files) > 1:
        request.files.extend(variant.files)
    else:
        request.file_state.path = variant.files[0].path if variant.files else "index.html"
        request.file_state.content = entry
    return request
