"""The demo model: a scripted session that builds a page through the real tool path.

On a create it plays what a good model does on a new app: think, create `index.html`
in one `create_file` call whose arguments stream in pieces (so the live preview fills
in), check it with `screenshot_preview` when that tool is offered, refine it with one
`edit_file`, and close with a one-line summary. On an update it edits the current file
with one `edit_file` that shows the request on the page (`demo_update.py`), and its
summary says exactly that. A failed tool call ends the script with a summary that says
so, instead of carrying on as if it had worked.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence

from services.agent.demo_pages import (
    CTA_NEW,
    CTA_OLD,
    STACK_LABELS,
    demo_page,
    demo_title,
    normalize_stack,
    theme_name,
)
from services.agent.demo_react import demo_react_script
from services.agent.demo_site import demo_site_script, responsive_lines
from services.agent.demo_update import demo_edit
from services.agent.domain import FileState, GenerationRequest
from services.agent.pages import page_plan
from services.agent.prompts import current_file
from services.agent.providers.base import ExecutedTool
from services.agent.providers.scripted import (
    Say,
    ScriptedTurn,
    Think,
    TurnSource,
    call_tool,
    chunk_text,
)

# Prose streams in smaller pieces than the file so it reads like typing.
_TEXT_CHUNK = 12
_ERROR_CHARS = 160
_QUOTE_CHARS = 120


def demo_turns(
    request: GenerationRequest,
    variant_index: int,
    tools_offered: Collection[str],
    chunk_size: int = 48,
) -> TurnSource:
    """The demo model's script for one variant of `request`: an update with a current
    file edits that file; anything else builds a new page."""
    file = current_file(request) if request.generation_type == "update" else None
    if file is not None and file.content.strip():
        instruction = request.prompt.text.strip() or _last_user_text(request)
        return demo_update_script(file, instruction, variant_index, tools_offered, chunk_size)
    prompt = request.prompt
    if request.stack == "react_vite":
        return _stop_on_failure(demo_react_script(prompt.text, variant_index, chunk_size))
    plan = page_plan(len(prompt.images), prompt.image_meta)
    if plan.multi_page:
        turns = demo_site_script(
            prompt.text, request.stack, variant_index, tools_offered, plan, chunk_size
        )
        return _stop_on_failure(turns)
    return demo_script(
        prompt.text, request.stack, variant_index, tools_offered, chunk_size, plan.widths
    )


def _last_user_text(request: GenerationRequest) -> str:
    user = next((m for m in reversed(request.history) if m.role == "user"), None)
    return user.text.strip() if user is not None else ""


def demo_update_script(
    file: FileState,
    instruction: str,
    variant_index: int,
    tools_offered: Collection[str],
    chunk_size: int = 48,
) -> TurnSource:
    """An update: one `edit_file` on `file` that shows `instruction` as a note on the page,
    a `screenshot_preview` when offered, and a summary of exactly what changed."""
    edit = demo_edit(file, instruction)
    call_id = f"demo-{variant_index}"
    short = " ".join(instruction.split())
    if len(short) > _QUOTE_CHARS:
        short = short[: _QUOTE_CHARS - 1] + "\u2026"
    asked = f"\u201c{short}\u201d" if short else "an update without instruction text"
    arguments = {
        "path": file.path,
        "old_text": edit.old_text,
        "new_text": edit.new_text,
        "count": 1,
    }
    turns = [
        ScriptedTurn(
            (
                _think(
                    f"The user asks for {asked}. I am the built-in demo model and cannot "
                    f"interpret requests, so I'll show this one on the current {file.path} "
                    "and leave the rest of the page as it is."
                ),
                _say("Adding your request to the current page as a visible note."),
                call_tool(f"{call_id}-edit", "edit_file", arguments, chunk_size),
            )
        )
    ]
    if "screenshot_preview" in tools_offered:
        turns.append(
            ScriptedTurn(
                (
                    _say("Let me check that the note shows on desktop and mobile."),
                    call_tool(f"{call_id}-screenshot", "screenshot_preview", {}, chunk_size),
                )
            )
        )
    where = (
        f"Replaced the demo note in {file.path}"
        if edit.replaces_note
        else f"Added a note at the bottom right of {file.path}"
    )
    summary = (
        f"{where} with edit_file, showing your request {asked}; the rest of the page is "
        "unchanged. I am the built-in demo model and cannot interpret requests: with a "
        "model API key, a real model would make this change to the page itself."
    )
    turns.append(ScriptedTurn((_say(summary),)))
    return _stop_on_failure(tuple(turns))


def demo_script(
    prompt_text: str,
    stack: str,
    variant_index: int,
    tools_offered: Collection[str],
    chunk_size: int = 48,
    widths: Sequence[int] = (),
) -> TurnSource:
    """The demo model's turns for one variant, as a `ScriptedSession` script; `widths`:
    the widths its screenshots were taken at (two or more: it says it is responsive)."""
    stack = normalize_stack(stack)
    page = demo_page(prompt_text, stack, variant_index)
    title = demo_title(prompt_text)
    label = STACK_LABELS[stack]
    theme = theme_name(variant_index)
    call_id = f"demo-{variant_index}"
    wanted = f"\u201c{title}\u201d" if prompt_text.strip() else "the screenshot recreated"
    checked = "screenshot_preview" in tools_offered
    responsive = responsive_lines(widths) if len(widths) > 1 else None

    turns = [
        ScriptedTurn(
            (
                _think(
                    f"The user wants {wanted}. I'll build it as a single index.html "
                    f"with {label}: a hero, three feature cards, a call to action and a footer, "
                    f"in a {theme} colour theme." + (f" {responsive[0]}" if responsive else "")
                ),
                _say("I'll create the page now."),
                call_tool(
                    f"{call_id}-create",
                    "create_file",
                    {"path": "index.html", "content": page},
                    chunk_size,
                ),
            )
        )
    ]
    if checked:
        turns.append(
            ScriptedTurn(
                (
                    _say(
                        responsive[1]
                        if responsive
                        else "Let me check how it renders on desktop and mobile."
                    ),
                    call_tool(f"{call_id}-screenshot", "screenshot_preview", {}, chunk_size),
                )
            )
        )
    edit = {"path": "index.html", "old_text": CTA_OLD, "new_text": CTA_NEW, "count": 1}
    turns.append(
        ScriptedTurn(
            (
                _think(
                    (
                        (
                            "The renders look balanced at every width. "
                            if responsive
                            else "The desktop and mobile renders look balanced. "
                        )
                        if checked
                        else "The structure is in place. "
                    )
                    + "The final call to action is generic; a concrete offer tells visitors "
                    "exactly what they get."
                ),
                _say("Making the call to action more specific."),
                call_tool(f"{call_id}-edit", "edit_file", edit, chunk_size),
            )
        )
    )
    summary = (
        f"Built \u201c{title}\u201d as a single index.html ({label}, {theme} theme) with a "
        "hero, three feature cards, a sharper call to action and a footer."
    )
    turns.append(ScriptedTurn((_say(summary),)))
    return _stop_on_failure(tuple(turns))


def _stop_on_failure(plan: Sequence[ScriptedTurn]) -> TurnSource:
    """Plays `plan`, but after a failed tool call only reports the failure."""

    def next_turn(turn: int, results: Sequence[Sequence[ExecutedTool]]) -> ScriptedTurn | None:
        for index, executed in enumerate(results):
            failed = next((e for e in executed if not e.ok), None)
            if failed is not None:
                # Report once, right after the failing turn, then fall silent.
                return _failure_turn(failed) if turn == index + 1 else None
        return plan[turn] if 0 <= turn < len(plan) else None

    return next_turn


def _failure_turn(failed: ExecutedTool) -> ScriptedTurn:
    error = failed.result.get("error", failed.result)
    message = error if isinstance(error, str) else json.dumps(error, default=str)
    if len(message) > _ERROR_CHARS:
        message = message[: _ERROR_CHARS - 3] + "..."
    text = (
        f"I stopped here because {failed.call.name} failed: {message}. "
        "Whatever was built so far is in index.html."
    )
    return ScriptedTurn((_say(text),))


def _think(text: str) -> Think:
    return Think(chunk_text(text, _TEXT_CHUNK))


def _say(text: str) -> Say:
    return Say(chunk_text(text, _TEXT_CHUNK))
