"""Turns a generation request into the messages every variant starts from.

Three strategies, chosen by `select_strategy`:
- create_from_input: a fresh app from screenshots, a text description or a video;
- update_from_history: replays the variant's conversation, whose last user
  message already carries the new instruction. Its root (the create's screenshot,
  video or description) is rendered as the create rendered it, so an update starts
  with the request (and cache key) its lineage's create sent; one version of the
  file goes in full and each later one as its replacements (`versions.py`), so an
  update costs the same whatever its number of versions, and all but its last
  instruction is the prefix the previous update sent;
- update_from_file_snapshot: imported code (or any update without history),
  sent as the current file plus the change request.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Literal

from services.agent.domain import FileState, GenerationRequest, HistoryMessage, Prompt
from services.agent.pages import page_plan
from services.agent.prompts import templates, versions
from services.agent.prompts.file_seed import current_file
from services.agent.prompts.pages_text import other_files_block, page_plan_block
from services.agent.prompts.system import ALL_TOOLS, build_system_prompt
from services.agent.providers.base import PromptMessage
from services.common.html import extract_html_content

Strategy = Literal["create_from_input", "update_from_history", "update_from_file_snapshot"]


class PromptError(ValueError):
    """The request cannot be turned into a prompt; the message is safe to show the user."""


def select_strategy(request: GenerationRequest) -> Strategy:
    if request.generation_type == "create":
        return "create_from_input"
    if request.history:
        return "update_from_history"
    if request.files or (request.file_state is not None and request.file_state.content.strip()):
        return "update_from_file_snapshot"
    raise PromptError("Update requests require history or fileState.content")


def build_prompt_messages(
    request: GenerationRequest,
    *,
    tools: Collection[str] = ALL_TOOLS,
    uploaded_asset_ids: Mapping[str, str] | None = None,
    collapse_versions: bool = True,
    text_mode: bool = False,
) -> list[PromptMessage]:
    """The system message followed by the user (and replayed assistant) messages.

    `tools` are the names of the tools the model is offered; no text names any other.
    `uploaded_asset_ids` maps an uploaded image's data URL to the temporary asset
    id it was staged under; each message with such images gets the id block
    appended to its text so the model can promote them with `save_assets` (ignored
    when `save_assets` is not offered). `collapse_versions=False` replays every
    earlier version of the file in full, as upstream does (the cost bench's baseline).
    `text_mode` is for a model offered no tools: it writes the page in a fenced block.
    """
    offered = frozenset() if text_mode else frozenset(tools)
    if not request.image_generation_enabled:
        # The worker refuses it when generation is off, whatever the caller offered.
        offered -= {"generate_images"}
    asset_ids: Mapping[str, str] = (uploaded_asset_ids or {}) if "save_assets" in offered else {}
    system = PromptMessage("system", build_system_prompt(offered, text_mode=text_mode))
    strategy = select_strategy(request)
    if strategy == "create_from_input":
        return [system, _create_from_input(request, offered, asset_ids)]
    if strategy == "update_from_history":
        current = current_file(request) if collapse_versions else None
        return [system, *_update_from_history(request, offered, asset_ids, current)]
    return [system, _update_from_file_snapshot(request, offered, asset_ids)]


def _policy(request: GenerationRequest, offered: frozenset[str]) -> str:
    return templates.image_policy(request.image_generation_enabled, "generate_images" in offered)


def _with_asset_ids(text: str, images: Sequence[str], asset_ids: Mapping[str, str]) -> str:
    block = templates.asset_id_block([asset_ids.get(image) for image in images])
    return templates.append_block(text, block)


def _create_from_input(
    request: GenerationRequest, offered: frozenset[str], asset_ids: Mapping[str, str]
) -> PromptMessage:
    prompt = request.prompt
    text = _with_asset_ids(prompt.text, prompt.images, asset_ids)
    policy = _policy(request, offered)
    mode: str = request.input_mode
    if mode == "image":
        body = templates.image_create_text(
            stack=request.stack,
            design_system=request.design_system,
            policy=policy,
            tools=offered,
            extra=text,
        )
        metas = prompt.image_meta
        plan = page_plan(len(prompt.images), metas)
        widths = [
            metas[i].viewport_width if i < len(metas) else None for i in range(len(prompt.images))
        ]
        body = templates.join_sections(body, page_plan_block(plan, widths))
        return PromptMessage("user", body, images=prompt.images)
    if mode == "text":
        body = templates.text_create_text(
            description=text,
            stack=request.stack,
            design_system=request.design_system,
            policy=policy,
        )
        return PromptMessage("user", body)
    if mode == "video":
        if not prompt.videos:
            raise PromptError("Video mode requires a video to be provided")
        body = templates.video_create_text(
            stack=request.stack,
            design_system=request.design_system,
            policy=policy,
            extra=text,
        )
        # Only the first recording is used: the UI sends at most one.
        return PromptMessage("user", body, videos=prompt.videos[:1])
    raise PromptError(f"Unsupported input mode: {mode}")


def _update_prefix(request: GenerationRequest, offered: frozenset[str]) -> str:
    return templates.update_prefix(
        stack=request.stack,
        design_system=request.design_system,
        policy=_policy(request, offered),
    )


def _update_from_history(
    request: GenerationRequest,
    offered: frozenset[str],
    asset_ids: Mapping[str, str],
    current: FileState | None,
) -> list[PromptMessage]:
    """`current` is the file the variants edit (None: replay the history as it is).

    It is recovered from the raw history before any version in it is replaced, so a
    request without `file_state` still edits its last version.
    """
    # The prompt object is deliberately unused: the client already appended the new
    # instruction as the last user message of the history.
    history = request.history
    if not any(message.role == "user" for message in history):
        raise PromptError("Update history must include at least one user message")
    # Which assistant messages are versions of the file, and their code, oldest first.
    versions_at = {
        index: extract_html_content(m.text)
        for index, m in enumerate(history)
        if current is not None and m.role == "assistant" and _is_version(m.text, current)
    }
    codes = list(versions_at.values())
    shown = versions.plan(codes)
    path = (current.path if current else "") or templates.DEFAULT_FILE_PATH
    messages: list[PromptMessage] = []
    prefixed = False
    number = 0  # versions so far
    for index, message in enumerate(history):
        if message.role == "assistant":
            if index in versions_at:
                text = templates.version_text(number + 1, path, codes[number], shown[number])
                number += 1
            else:
                text = templates.wrap_file(message.text)
            messages.append(PromptMessage("assistant", text))
            continue
        root = None
        if current is not None and index == 0:
            # Replayed as the create sent it: the same prefix, the same cache key.
            root = _as_created(request, message, offered, asset_ids)
        if root is not None:
            messages.append(root)
            prefixed = True
            continue
        # Ids are content-addressed, so re-announcing them on every turn is stable.
        text = _with_asset_ids(message.text, message.images, asset_ids)
        if not prefixed:
            text = templates.join_sections(_update_prefix(request, offered), text)
            prefixed = True
        messages.append(_user_message(message, text))
    if current is not None:
        same = bool(codes) and codes[-1].strip() == current.content.strip()
        version = len(codes) if same else 0
        _append_current_file(messages, current, offered, version, request.files)
    return messages


def _as_created(
    request: GenerationRequest,
    root: HistoryMessage,
    offered: frozenset[str],
    asset_ids: Mapping[str, str],
) -> PromptMessage | None:
    """The history's first message as the create rendered it (the same text, media
    and asset ids), or None when it holds no input for the request's mode."""
    mode = request.input_mode
    usable = {"image": root.images, "video": root.videos, "text": root.text.strip()}
    if not usable.get(mode):
        return None
    prompt = Prompt(text=root.text, images=root.images, videos=root.videos)
    create = replace(request, generation_type="create", prompt=prompt, history=())
    return _create_from_input(create, offered, asset_ids)


def _is_version(text: str, current: FileState) -> bool:
    """Whether an assistant message holds a version of the file rather than a reply.

    The upstream UI stores each variant's final code as its assistant message; a
    message recovered as the current file counts even when it is not a document.
    """
    code = extract_html_content(text).strip()
    if not code:
        return False
    head = code[:32].lower()
    return head.startswith(("<!doctype html", "<html")) or code == current.content.strip()


def _append_current_file(
    messages: list[PromptMessage],
    current: FileState,
    offered: frozenset[str],
    version: int,
    files: Sequence[FileState] = (),
) -> None:
    """Says which file the change applies to after the last instruction: version
    `version` of the history, or (0) the current file itself, in full. The new part
    of the request goes last; the instruction before it stays where the next update
    replays it."""
    if version:
        block = templates.current_version_note(version, current.path, offered)
    else:
        block = templates.current_file_block(current.path, current.content, offered)
    block = templates.join_sections(block, other_files_block(files, current.path, offered))
    last = messages[-1] if messages else None
    if last is not None and last.role == "user":
        messages[-1] = replace(last, text=templates.join_sections(last.text, block))
    else:
        messages.append(PromptMessage("user", block))


def _user_message(message: HistoryMessage, text: str) -> PromptMessage:
    return PromptMessage("user", text, images=message.images, videos=message.videos)


def _update_from_file_snapshot(
    request: GenerationRequest, offered: frozenset[str], asset_ids: Mapping[str, str]
) -> PromptMessage:
    file_state = current_file(request)
    if file_state is None:  # select_strategy rules this out; the check narrows the type
        raise PromptError("Update requests require history or fileState.content")
    prompt = request.prompt
    # The select-and-edit instruction (full_text) carries the selected element, so it
    # wins over the display text; the asset block rides only on the display text.
    text = _with_asset_ids(prompt.text, prompt.images, asset_ids)
    change_request = prompt.full_text.strip() or text.strip() or templates.DEFAULT_CHANGE_REQUEST
    body = templates.snapshot_update_text(
        prefix=_update_prefix(request, offered),
        path=file_state.path or templates.DEFAULT_FILE_PATH,
        content=file_state.content,
        change_request=change_request,
        tools=offered,
        others=other_files_block(request.files, file_state.path, offered),
    )
    return PromptMessage("user", body, images=prompt.images, videos=prompt.videos)
