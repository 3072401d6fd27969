"""The demo model's update (issue 15, item 9): one `edit_file` on the current page that
shows the request as a note, and a summary that says exactly that.

The generation tests run the real agent path (the provider factory's demo session, the
engine, the real file tools in-process); the unit tests pin the edit itself.
"""

from __future__ import annotations

import json
from dataclasses import replace
from html.parser import HTMLParser
from typing import Any

import pytest

from services.agent import events as ev
from services.agent.demo import demo_turns, demo_update_script
from services.agent.demo_pages import CTA_NEW, CTA_OLD, demo_page
from services.agent.demo_update import NOTE_END, NOTE_START, demo_edit, note_html
from services.agent.domain import FileState, GenerationRequest, HistoryMessage, Prompt
from services.agent.providers.base import ExecutedTool, ToolCall
from services.agent.providers.factory import ProviderSessions
from services.agent.providers.scripted import CallTool
from services.agent.settings import AgentSettings
from services.common.html import extract_html_content
from tests.agent.cores import Manager as GenerationManager
from tests.agent.test_demo import STACKS
from tests.agent.test_engine import InProcessTools, run

ASK = "Make the header blue"
PREVIOUS = demo_page("A landing page for a bakery", "html_tailwind", 0).replace(CTA_OLD, CTA_NEW)


class _Note(HTMLParser):
    """The text inside the page's demo note, and how many notes there are."""

    def __init__(self) -> None:
        super().__init__()
        self.notes = 0
        self.request = ""
        self._in_request = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        if tag == "aside" and "data-s2c-demo-note" in names:
            self.notes += 1
        self._in_request = "data-s2c-demo-request" in names

    def handle_endtag(self, tag: str) -> None:
        self._in_request = False

    def handle_data(self, data: str) -> None:
        if self._in_request:
            self.request += data


def note_of(page: str) -> _Note:
    parser = _Note()
    parser.feed(page)
    return parser


def update(**fields: Any) -> GenerationRequest:
    base = GenerationRequest(
        generation_id="",
        generation_type="update",
        input_mode="text",
        stack="html_tailwind",
        prompt=Prompt(text=ASK),
        history=(
            HistoryMessage("user", "A landing page for a bakery"),
            HistoryMessage("assistant", PREVIOUS),
            HistoryMessage("user", ASK),
        ),
        file_state=FileState("index.html", PREVIOUS),
        models=("demo",),
    )
    return replace(base, **fields)


async def generate(request: GenerationRequest) -> list[ev.Event]:
    settings = AgentSettings(demo_pace_s=0.0)
    manager = GenerationManager(settings, InProcessTools(), ProviderSessions(settings))
    return await run(manager, request)


def of_variant(events: list[ev.Event], variant: int, kind: type[Any]) -> list[Any]:
    return [e.payload for e in events if e.variant_index == variant and isinstance(e.payload, kind)]


def said(events: list[ev.Event], variant: int) -> str:
    return "".join(p.text for p in of_variant(events, variant, ev.AssistantDelta))


@pytest.mark.parametrize("with_file_state", [True, False], ids=["fileState", "history-only"])
async def test_an_update_edits_the_current_page_and_says_what_changed(
    with_file_state: bool,
) -> None:
    request = update() if with_file_state else update(file_state=None)
    # From history, the file is the HTML document in the assistant message.
    previous = PREVIOUS if with_file_state else extract_html_content(PREVIOUS)
    events = await generate(request)

    assert events[-1].payload == ev.GenerationComplete("completed")
    for variant in (0, 1):
        started = [p.name for p in of_variant(events, variant, ev.ToolStart)]
        assert started == ["edit_file"]  # never create_file
        assert all(p.ok for p in of_variant(events, variant, ev.ToolResult))
        final = of_variant(events, variant, ev.CodeSnapshot)[-1].content
        note = note_html(ASK)
        body = '<body class="bg-white font-sans text-slate-700 antialiased" data-demo-variant="0">'
        # The previous page, byte for byte, plus the note right after <body>.
        assert final == previous.replace(body, f"{body}\n{note}", 1)
        assert note_of(final).request == f"\u201c{ASK}\u201d"
        assert said(events, variant).endswith(
            "Added a note at the bottom right of index.html with edit_file, showing your "
            f"request \u201c{ASK}\u201d; the rest of the page is unchanged. I am the built-in "
            "demo model and cannot interpret requests: with a model API key, a real model "
            "would make this change to the page itself."
        )


@pytest.mark.parametrize("stack", STACKS)
async def test_every_demo_stack_gets_exactly_one_note(stack: str) -> None:
    page = demo_page("A pricing page", stack, 1)
    events = await generate(update(stack=stack, file_state=FileState("index.html", page)))
    final = of_variant(events, 0, ev.CodeSnapshot)[-1].content
    assert final.replace(f"\n{note_html(ASK)}", "", 1) == page
    assert note_of(final).notes == 1


async def test_a_second_update_replaces_the_demo_note() -> None:
    first = await generate(update())
    once = of_variant(first, 0, ev.CodeSnapshot)[-1].content
    again = "Now add a footer"
    history = (HistoryMessage("assistant", once), HistoryMessage("user", again))
    events = await generate(update(prompt=Prompt(text=again), file_state=None, history=history))
    final = of_variant(events, 0, ev.CodeSnapshot)[-1].content
    seeded = extract_html_content(once)
    assert final == seeded.replace(note_html(ASK), note_html(again))
    assert note_of(final).notes == 1
    assert said(events, 0).startswith("Adding your request")
    assert "Replaced the demo note in index.html with edit_file" in said(events, 0)


async def test_an_update_with_no_code_anywhere_builds_a_page() -> None:
    request = update(file_state=None, history=(HistoryMessage("user", ASK),))
    events = await generate(request)
    assert [p.name for p in of_variant(events, 0, ev.ToolStart)] == ["create_file", "edit_file"]


def test_a_hostile_instruction_stays_text() -> None:
    hostile = '</aside><script>alert(1)</script><!-- {{ 7*7 }} " onclick="x'
    edit = demo_edit(FileState("index.html", PREVIOUS), hostile)
    page = PREVIOUS.replace(edit.old_text, edit.new_text, 1)
    assert "<script>alert(1)" not in page
    assert note_of(page).request == f"\u201c{hostile}\u201d"
    assert note_of(page).notes == 1
    assert " v-pre " in edit.new_text  # Vue leaves {{ }} in the note alone


def test_a_page_without_body_gets_the_note_first() -> None:
    fragment = "<div class='card'><h1>Hello</h1></div>"
    edit = demo_edit(FileState("index.html", fragment), ASK)
    assert fragment.replace(edit.old_text, edit.new_text, 1) == f"{note_html(ASK)}\n{fragment}"


def test_the_edit_target_is_its_own_first_occurrence() -> None:
    # A body tag quoted earlier in a script is the same text, so edit_file's first match
    # is the spot demo_edit chose.
    page = '<html><head><script>const t = "<body>";</script></head><body>\n<p>x</p></body></html>'
    edit = demo_edit(FileState("index.html", page), ASK)
    assert edit.old_text == "<body>"
    assert page.index(edit.old_text) == page.index("<body>")
    assert NOTE_START in edit.new_text
    assert NOTE_END in edit.new_text


def test_a_blank_instruction_says_so() -> None:
    script = demo_turns(update(prompt=Prompt(), history=()), 0, set())
    first = script(0, [])
    assert first is not None
    [call] = [step for step in first.steps if isinstance(step, CallTool)]
    arguments = json.loads("".join(call.argument_chunks))
    assert call.name == "edit_file"
    assert "(the update had no instruction text)" in arguments["new_text"]
    assert arguments["new_text"] == arguments["old_text"] + "\n" + note_html("")


def test_with_screenshot_preview_the_update_checks_its_work() -> None:
    script = demo_update_script(FileState("index.html", PREVIOUS), ASK, 0, {"screenshot_preview"})
    names: list[str] = []
    results: list[list[ExecutedTool]] = []
    for turn in range(5):
        step = script(turn, results)
        if step is None:
            break
        calls = [s for s in step.steps if isinstance(s, CallTool)]
        names += [c.name for c in calls]
        results.append([ExecutedTool(ToolCall(c.id, c.name, {}), True, {}) for c in calls])
    assert names == ["edit_file", "screenshot_preview"]


def test_a_failed_edit_is_reported_not_papered_over() -> None:
    script = demo_update_script(FileState("index.html", PREVIOUS), ASK, 0, set())
    failed = ExecutedTool(
        ToolCall("demo-0-edit", "edit_file", {}), False, {"error": "old_text not found"}
    )
    report = script(1, [[failed]])
    assert report is not None
    text = "".join(chunk for step in report.steps for chunk in getattr(step, "chunks", ()))
    assert "edit_file failed: old_text not found" in text
    assert script(2, [[failed], []]) is None
