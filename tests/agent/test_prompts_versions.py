"""Updates from history: one version in full, later ones as their replacements (the
file the model reads off the prompt is the current file), earlier bases elided, and
the request stays flat however many versions there are."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from services.agent.domain import FileState, GenerationRequest, HistoryMessage, Prompt
from services.agent.prompts import build_prompt_messages, current_file
from services.agent.prompts.system import ALL_TOOLS
from services.agent.providers.base import PromptMessage
from services.agent.providers.streaming import lineage_cache_key
from services.tools.file_tools import edit_file
from services.tools.types import FileState as ToolFile
from services.tools.types import ToolContext
from tests.agent.test_prompts import (
    CODE,
    DESIGN,
    SCREENSHOT,
    TMP_ID,
    VIDEO,
    assistant,
    make_request,
    update_history,
    user,
)


def _two_version_history() -> GenerationRequest:
    return update_history(
        user("", SCREENSHOT),
        assistant(f"\n{CODE}\n\n"),
        user("Bigger title"),
        assistant(CODE),
        user("Now add a footer"),
        input_mode="text",
        prompt=Prompt(text="ignored: the history already ends with the instruction"),
    )


def test_history_replays_the_conversation_as_upstream_without_collapsing() -> None:
    messages = build_prompt_messages(_two_version_history(), collapse_versions=False)
    assert [message.role[0] for message in messages] == list("suauau")
    assert messages[1].images == (SCREENSHOT,)
    assert messages[2] == PromptMessage("assistant", f'<file path="index.html">\n{CODE}\n</file>')
    assert messages[3] == PromptMessage("user", "Bigger title")
    assert messages[4].text == f'<file path="index.html">\n{CODE}\n</file>'
    assert messages[5] == PromptMessage("user", "Now add a footer")
    assert all("ignored" not in message.text for message in messages)


PAGE = "<html><body>\n<h1>Hello</h1>\n" + "".join(f"<p>row {i}</p>\n" for i in range(9))
PAGE += "</body></html>"
EDITED = PAGE.replace("<h1>Hello</h1>", "<h1>Hello there</h1>")
FULL = f'[version 1 of index.html, in full]\n<file path="index.html">\n{CODE}\n</file>'
EDIT = re.compile(
    r"<edit>\n<old_text>\n(.*?)</old_text>\n<new_text>\n(.*?)</new_text>\n</edit>", re.S
)


def note(number: int) -> str:
    return (
        f"The current source of index.html is version {number} above: the last version "
        "shown in full with the replacements of every later version applied in order. "
        "Apply the change request above to it with `edit_file`; any text you replace must "
        "match that current source exactly."
    )


def _edited_history(**overrides: object) -> GenerationRequest:
    return update_history(
        user("", SCREENSHOT),
        assistant(f"\n{PAGE}\n\n"),
        user("Bigger title"),
        assistant(EDITED),
        user("Now add a footer"),
        input_mode="text",
        **overrides,
    )


def test_the_first_version_goes_in_full_and_later_ones_as_replacements() -> None:
    messages = build_prompt_messages(_edited_history())
    assert [message.role[0] for message in messages] == list("suauau")
    assert messages[1].images == (SCREENSHOT,)
    assert messages[2] == PromptMessage("assistant", FULL.replace(CODE, PAGE))
    assert messages[3] == PromptMessage("user", "Bigger title")
    assert messages[4].text == (
        "[version 2 of index.html: version 1 with these replacements, applied in order]\n"
        "<edit>\n<old_text>\n<h1>Hello</h1>\n</old_text>\n"
        "<new_text>\n<h1>Hello there</h1>\n</new_text>\n</edit>"
    )
    assert messages[5].text == f"Now add a footer\n\n{note(2)}"


def test_the_same_version_twice_says_so() -> None:
    messages = build_prompt_messages(_two_version_history())
    assert messages[2].text == FULL
    assert messages[4].text == "[version 2 of index.html: the same as version 1]"
    assert messages[5].text.endswith(note(2))
    assert sum(message.text.count(CODE) for message in messages) == 1


def test_file_state_is_the_file_sent_and_a_later_edit_is_not_lost() -> None:
    # The UI's fileState wins over the history's last version (an edited preview).
    edited = PAGE.replace("Hello", "Hello, edited")
    request = replace(_edited_history(), file_state=FileState("index.html", edited))
    messages = build_prompt_messages(request)
    assert messages[4].text.startswith("[version 2 of index.html: version 1 with")
    assert messages[5].text.endswith(f'<current_file path="index.html">\n{edited}\n</current_file>')


def test_without_file_state_the_file_is_recovered_before_the_versions_are_replaced() -> None:
    fragment = "<div>just a fragment</div>"
    request = update_history(user("A page"), assistant(fragment), user("Blue"))
    messages = build_prompt_messages(request)
    assert messages[2].text == (
        f'[version 1 of index.html, in full]\n<file path="index.html">\n{fragment}\n</file>'
    )
    assert messages[3].text.endswith(note(1))


def test_update_request_size_is_flat_across_versions() -> None:
    page = "<!DOCTYPE html><html><body>" + "<p>row</p>" * 3000 + "</body></html>"
    history: list[HistoryMessage] = [user("", SCREENSHOT)]
    sizes = []
    for number in range(1, 4):
        page = page.replace("</body>", f"<p>edit {number}</p></body>")
        history += [assistant(page), user(f"Change {number}")]
        request = update_history(*history, file_state=FileState("index.html", page))
        sizes.append(sum(len(m.text) for m in build_prompt_messages(request)))
        naive = build_prompt_messages(request, collapse_versions=False)
        assert sum(len(m.text) for m in naive) > number * len(page)
    assert max(sizes) <= min(sizes) * 1.10


def test_a_short_assistant_reply_stays() -> None:
    request = update_history(
        user("A page"), assistant(CODE), user("Blue"), assistant("Done: it is blue."), user("Red")
    )
    messages = build_prompt_messages(request, tools=ALL_TOOLS)
    # The last assistant message is the seed (upstream's rule), so it is the current file;
    # replacing all of version 1 is more than a quarter of it, so it goes in full.
    assert messages[2].text == (
        f"[version 1 of index.html, {len(CODE):,} characters — superseded by a later "
        "version shown in full, not repeated here]"
    )
    assert messages[4].text.startswith("[version 2 of index.html, in full]\n")
    with_state = replace(request, file_state=FileState("index.html", CODE))
    kept = build_prompt_messages(with_state)
    assert kept[2].text == FULL
    assert kept[4].text == '<file path="index.html">\nDone: it is blue.\n</file>'
    assert kept[5].text.endswith(note(1))


async def shown_file(messages: list[PromptMessage]) -> str:
    """The file a model reads off the prompt: the version in full, then every later
    version's replacements applied with the production edit_file."""
    shown = ""
    for message in messages:
        head, _, body = message.text.partition("\n")
        if message.role != "assistant" or not head.startswith("[version "):
            continue
        if head.endswith("in full]"):
            shown = body.removeprefix('<file path="index.html">\n').removesuffix("\n</file>")
        for old, new in EDIT.findall(body):
            args = {"old_text": old, "new_text": new}
            outcome = await edit_file(args, ToolFile("index.html", shown), ToolContext())
            assert outcome.ok
            assert outcome.updated_file is not None
            shown = outcome.updated_file.content
    return shown


async def test_edit_file_lands_on_the_file_the_prompt_shows() -> None:
    # Without file_state: recovered from the raw history, then shown as base + edits.
    request = _edited_history()
    seed = current_file(request)
    assert seed is not None
    assert await shown_file(build_prompt_messages(request)) == seed.content.strip()
    args = {"old_text": "<h1>Hello there</h1>", "new_text": "<h1>Hi</h1>"}
    outcome = await edit_file(args, ToolFile(seed.path, seed.content), ToolContext())
    assert outcome.ok
    assert outcome.updated_file == ToolFile("index.html", EDITED.replace("Hello there", "Hi"))


async def test_a_long_history_reads_back_as_the_current_file_and_rebases() -> None:
    page = "<!DOCTYPE html>\n<html><body>\n" + "".join(f"<p>row {i}</p>\n" for i in range(60))
    page += "</body></html>\n"
    history: list[HistoryMessage] = [user("", SCREENSHOT)]
    for number in range(1, 12):
        page = page.replace(f"<p>row {number}</p>", f"<p>row {number} changed a lot</p>")
        page = page.replace("</body>", f"<p>added {number}</p>\n</body>")
        history += [assistant(page), user(f"Change {number}")]
    request = update_history(*history, file_state=FileState("index.html", page))
    messages = build_prompt_messages(request)
    assert await shown_file(messages) == page.strip()
    heads = [m.text.partition("\n")[0] for m in messages if m.role == "assistant"]
    full = [i for i, head in enumerate(heads) if head.endswith("in full]")]
    assert len(full) == 1
    assert full[0] > 0  # rebased: the earlier base is elided
    assert all("superseded" in head for head in heads[: full[0]])


@pytest.mark.parametrize(
    ("mode", "root"),
    [
        ("image", user("Dark please", SCREENSHOT)),
        ("text", user("a pricing page")),
        ("video", user("", videos=(VIDEO,))),
    ],
)
def test_the_root_replays_as_its_create_with_the_same_cache_key(
    mode: str, root: HistoryMessage
) -> None:
    prompt = Prompt(text=root.text, images=root.images, videos=root.videos)
    ids = {SCREENSHOT: TMP_ID}
    settings: dict[str, Any] = {"input_mode": mode, "design_system": DESIGN, "stack": "bootstrap"}
    create = build_prompt_messages(make_request(prompt=prompt, **settings), uploaded_asset_ids=ids)
    update = update_history(root, assistant(PAGE), user("Bigger title"), **settings)
    messages = build_prompt_messages(update, uploaded_asset_ids=ids)
    assert messages[:2] == create
    assert lineage_cache_key(messages) == lineage_cache_key(create)
    # The baseline replays the root as upstream does: the update prefix, then its text.
    naive = build_prompt_messages(update, uploaded_asset_ids=ids, collapse_versions=False)
    assert naive[1].text.startswith("Selected stack: bootstrap.")


def test_a_root_without_input_for_its_mode_keeps_the_update_prefix() -> None:
    request = update_history(user("Make it blue"), assistant(PAGE), user("Red"))
    messages = build_prompt_messages(request)  # image mode, no image in the root
    assert messages[1].text.startswith("Selected stack: html_tailwind.")
    assert messages[1].text.endswith("Make it blue")
