"""Updates from history: earlier versions become placeholders, the current file goes
once at the end, and the request stays flat however many versions there are."""

from __future__ import annotations

from dataclasses import replace

from services.agent.domain import FileState, GenerationRequest, HistoryMessage, Prompt
from services.agent.prompts import build_prompt_messages, current_file
from services.agent.prompts.system import ALL_TOOLS
from services.agent.providers.base import PromptMessage
from services.tools.file_tools import edit_file
from services.tools.types import FileState as ToolFile
from services.tools.types import ToolContext
from tests.agent.test_prompts import CODE, SCREENSHOT, assistant, update_history, user


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


def placeholder(number: int, size: int = len(CODE)) -> str:
    return (
        f"[version {number} of index.html, {size:,} characters — "
        "not repeated here; the current file is below]"
    )


def test_history_versions_become_placeholders_and_the_file_goes_last_once() -> None:
    messages = build_prompt_messages(_two_version_history())
    assert [message.role[0] for message in messages] == list("suauau")
    assert messages[1].images == (SCREENSHOT,)
    assert messages[2] == PromptMessage("assistant", placeholder(1))
    assert messages[3] == PromptMessage("user", "Bigger title")
    assert messages[4] == PromptMessage("assistant", placeholder(2))
    assert messages[5].text == (
        "Now add a footer\n\nThe current source of index.html is below; apply the change "
        "request above to it with `edit_file`.\n\n"
        f'<current_file path="index.html">\n{CODE}\n</current_file>'
    )
    assert sum(message.text.count(CODE) for message in messages) == 1
    assert all("ignored" not in message.text for message in messages)


def test_file_state_is_the_file_sent_and_a_later_edit_is_not_lost() -> None:
    # The UI's fileState wins over the history's last version (an edited preview).
    edited = CODE.replace("Hello", "Hello, edited")
    request = replace(_two_version_history(), file_state=FileState("index.html", edited))
    messages = build_prompt_messages(request)
    assert messages[4].text == placeholder(2)
    assert messages[5].text.endswith(f'<current_file path="index.html">\n{edited}\n</current_file>')
    assert sum(message.text.count(CODE) for message in messages) == 0


def test_without_file_state_the_file_is_recovered_before_the_versions_are_replaced() -> None:
    fragment = "<div>just a fragment</div>"
    request = update_history(user("A page"), assistant(fragment), user("Blue"))
    messages = build_prompt_messages(request)
    assert messages[2].text == placeholder(1, len(fragment))
    assert messages[3].text.endswith(
        f'<current_file path="index.html">\n{fragment}\n</current_file>'
    )


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
    # The last assistant message is the seed (upstream's rule), so it is the current file.
    assert messages[4].text == placeholder(2, len("Done: it is blue."))
    with_state = replace(request, file_state=FileState("index.html", CODE))
    kept = build_prompt_messages(with_state)
    assert kept[2].text == placeholder(1)
    assert kept[4].text == '<file path="index.html">\nDone: it is blue.\n</file>'


async def test_edit_file_lands_on_the_file_the_prompt_shows() -> None:
    # Without file_state: recovered from the raw history, then placeholdered.
    request = _two_version_history()
    seed = current_file(request)
    assert seed is not None
    shown = build_prompt_messages(request)[-1].text
    assert f'<current_file path="index.html">\n{seed.content}\n</current_file>' in shown
    args = {"old_text": "<h1>Hello</h1>", "new_text": "<h1>Hi</h1>"}
    outcome = await edit_file(args, ToolFile(seed.path, seed.content), ToolContext())
    assert outcome.ok
    assert outcome.updated_file == ToolFile("index.html", CODE.replace("Hello", "Hi"))
