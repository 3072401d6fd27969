"""The demo model: its pages (per stack, escaped, varied) and its scripted turns."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from html.parser import HTMLParser
from xml.etree import ElementTree

import pytest

from services.agent.demo import demo_script
from services.agent.demo_pages import CTA_NEW, CTA_OLD, demo_page, demo_title
from services.agent.providers.base import (
    AssistantDelta,
    ExecutedTool,
    StreamEvent,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
)
from services.agent.providers.scripted import (
    CallTool,
    Say,
    ScriptedSession,
    ScriptedTurn,
    Think,
    TurnSource,
)

STACKS = (
    "html_tailwind",
    "html_css",
    "react_tailwind",
    "bootstrap",
    "vue_tailwind",
    "ionic_tailwind",
)
PROMPT = "Build me a landing page for a small coffee roastery in Lisbon. Warm and friendly."
HOSTILE = (
    '$title ${cards} </script><script>alert(1)</script>" onmouseover="alert(2)" x=\'y\' '
    "{{ constructor.constructor('alert(3)')() }} <!-- & \u2028 Get started today"
)

# Written out here rather than imported, so a typo in the module cannot agree with itself.
TAILWIND = "https://cdn.tailwindcss.com"
FONT_AWESOME = "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/5.15.3/css/all.min.css"
PINNED: dict[str, tuple[str, ...]] = {
    "html_tailwind": (TAILWIND, FONT_AWESOME),
    "html_css": (FONT_AWESOME,),
    "react_tailwind": (
        "https://cdn.jsdelivr.net/npm/react@18.0.0/umd/react.development.js",
        "https://cdn.jsdelivr.net/npm/react-dom@18.0.0/umd/react-dom.development.js",
        "https://unpkg.com/@babel/standalone@7.25.6/babel.min.js",
        TAILWIND,
        FONT_AWESOME,
    ),
    "bootstrap": (
        '<link href="https://cdn.jsdelivr.net/npm/bootstrap@5.3.2/dist/css/bootstrap.min.css" '
        'rel="stylesheet" '
        'integrity="sha384-T3c6CoIi6uLrA9TneNEoa7RxnatzjcDSCmG1MXxSR1GAsXEV/Dwwykc2MPK8M2HN" '
        'crossorigin="anonymous">',
        FONT_AWESOME,
    ),
    "vue_tailwind": (
        '<script src="https://registry.npmmirror.com/vue/3.3.11/files/dist/vue.global.js">',
        TAILWIND,
        FONT_AWESOME,
    ),
    "ionic_tailwind": (
        '<script type="module" src="https://cdn.jsdelivr.net/npm/@ionic/core/dist/ionic/ionic.esm.js">',
        '<script nomodule src="https://cdn.jsdelivr.net/npm/@ionic/core/dist/ionic/ionic.js">',
        "https://cdn.jsdelivr.net/npm/@ionic/core/css/ionic.bundle.css",
        TAILWIND,
        "import ionicons from 'https://cdn.jsdelivr.net/npm/ionicons/+esm'",
        '<script nomodule src="https://cdn.jsdelivr.net/npm/ionicons/dist/esm/ionicons.min.js">',
        "https://cdn.jsdelivr.net/npm/ionicons/dist/collection/components/icon/icon.min.css",
    ),
}


class _Structure(HTMLParser):
    """Every element and attribute name, in document order, and the meta description."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, tuple[str, ...]]] = []
        self.attributes: list[tuple[str, str | None]] = []
        self.description: str | None = None
        self.open: list[str] = []  # elements not closed yet
        self.misnested: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ("meta", "link"):
            self.open.append(tag)
        self.tags.append((tag, tuple(name for name, _ in attrs)))
        self.attributes.extend(attrs)
        if tag == "meta" and ("name", "description") in attrs:
            self.description = dict(attrs)["content"]

    def handle_endtag(self, tag: str) -> None:
        if self.open and self.open[-1] == tag:
            self.open.pop()
        else:
            self.misnested.append(tag)


def _parse(page: str) -> _Structure:
    parser = _Structure()
    parser.feed(page)
    parser.close()
    return parser


def _title_tag(page: str) -> str:
    match = re.search(r"<title>(.*?)</title>", page)
    assert match is not None
    return match.group(1)


# --- pages ---------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_is_a_full_document_with_its_pinned_cdns(stack: str) -> None:
    page = demo_page(PROMPT, stack, 2)

    assert page.startswith("<!DOCTYPE html>")
    assert page.rstrip().endswith("</html>")
    assert page.count("<body") == 1
    structure = _parse(page)
    assert structure.open == []
    assert structure.misnested == []
    assert 'data-demo-variant="2"' in page
    for needle in PINNED[stack]:
        assert needle in page, needle
    assert 4_000 <= len(page.encode()) <= 10_000
    assert _title_tag(page) == "Landing page for a small coffee roastery in Lisbon"
    for section in ("Explore features", "Ready when you are", CTA_OLD, "s2c demo model"):
        assert section in page
    assert page.count("<h3") + page.count("<ion-card-title") == 3  # three feature cards
    assert "<footer" in page


def test_stack_specific_rules() -> None:
    assert TAILWIND not in demo_page(PROMPT, "html_css", 0)
    assert TAILWIND not in demo_page(PROMPT, "bootstrap", 0)
    assert "font-awesome" not in demo_page(PROMPT, "ionic_tailwind", 0)
    react = demo_page(PROMPT, "react_tailwind", 0)
    assert "cdn.babeljs.io" not in react
    assert "@babel/standalone/" not in react  # never the unversioned Babel 8 URL
    assert '<script type="text/babel">' in react
    assert "ReactDOM.createRoot(document.getElementById('root'))" in react
    vue = demo_page(PROMPT, "vue_tailwind", 0)
    assert "const { createApp, ref } = Vue;" in vue
    assert ".mount('#app')" in vue
    ionic = demo_page(PROMPT, "ionic_tailwind", 0)
    assert ionic.index("ionicons/+esm") > ionic.index("</ion-app>")
    assert ionic.index("ionicons/+esm") < ionic.index("</body>")


def test_an_unknown_stack_falls_back_to_html_tailwind() -> None:
    assert demo_page(PROMPT, "svelte", 1) == demo_page(PROMPT, "html_tailwind", 1)


@pytest.mark.parametrize(
    ("prompt", "title"),
    [
        ("", "Your page"),
        ("   \n\t ", "Your page"),
        ("Build me a todo app. With dark mode.", "Todo app"),
        ("please create a pricing page", "Pricing page"),
        ("Clone the Stripe homepage", "Stripe homepage"),
        ("x" * 300, "X" + "x" * 58 + "\u2026"),
        (
            "Make a blog about hiking in the Alps and the Pyrenees, with photos and maps",
            "Blog about hiking in the Alps and the Pyrenees, with photos\u2026",
        ),
        (  # cut inside a word: the whole word goes
            "Make a blog about hiking in the Alps and the Pyrenees, with photographs",
            "Blog about hiking in the Alps and the Pyrenees, with\u2026",
        ),
    ],
)
def test_the_title_comes_from_the_prompt(prompt: str, title: str) -> None:
    assert demo_title(prompt) == title
    assert _title_tag(demo_page(prompt, "html_css", 0)) == title


def test_a_screenshot_without_text_gets_a_default_page() -> None:
    page = demo_page("", "html_tailwind", 0)
    assert _title_tag(page) == "Your page"
    assert "your screenshot" in page


@pytest.mark.parametrize("stack", STACKS)
def test_a_hostile_prompt_cannot_change_the_markup(stack: str) -> None:
    benign = _parse(demo_page("A plain prompt", stack, 1))
    hostile_page = demo_page(HOSTILE, stack, 1)
    hostile = _parse(hostile_page)

    # Same elements with the same attribute names: the prompt added no tag, no attribute.
    assert hostile.tags == benign.tags
    assert all(not name.startswith("on") for name, _ in hostile.attributes)
    assert "<script>alert" not in hostile_page
    assert "alert(1)</script>" not in hostile_page
    assert '" onmouseover="' not in hostile_page
    assert "<!--" not in hostile_page
    assert "\u2028" not in hostile_page
    # The prompt survives as text (escaped, not stripped), and the template placeholders in
    # it are shown, not expanded.
    assert hostile.description is not None
    assert HOSTILE[:70] in hostile.description
    assert html.unescape(_title_tag(hostile_page)).startswith("$title ${cards} </script>")


@pytest.mark.parametrize(
    ("stack", "pattern"),
    [("react_tailwind", r"const page = (\{.*?\});\n"), ("vue_tailwind", r"ref\((\{.*?\})\)")],
)
def test_react_and_vue_get_the_prompt_as_script_data(stack: str, pattern: str) -> None:
    page = demo_page(HOSTILE, stack, 0)
    match = re.search(pattern, page)
    assert match is not None
    data = json.loads(match.group(1))
    assert data["title"] == demo_title(HOSTILE)
    assert "</script>" in data["title"]  # intact once parsed, escaped in the page
    body = page.split("<body", 1)[1]
    # Only the data holds the prompt; the template (Vue's in-DOM one, or the JSX) references
    # it, so a `{{ … }}` in the prompt never becomes template source.
    assert body.count("constructor") == 2
    if stack == "vue_tailwind":
        assert "{{ page.title }}" in body
    else:
        assert "{page.title}" in body
        assert ' class="' not in body.split('<script type="text/babel">')[1]  # JSX: className


@pytest.mark.parametrize("variant", range(4))
def test_the_jsx_is_well_formed(variant: int) -> None:
    page = demo_page(HOSTILE, "react_tailwind", variant)
    jsx = page.split("return (<>", 1)[1].split("</>);", 1)[0]
    # JSX is XML-shaped: every tag closed, every attribute quoted; entities named as in HTML.
    jsx = jsx.replace("&times;", "&#215;").replace("&middot;", "&#183;")
    root = ElementTree.fromstring(f"<jsx>{jsx}</jsx>")
    assert [child.tag for child in root] == ["header", "main", "footer"]
    assert all("class" not in element.attrib for element in root.iter())


def test_variants_look_different() -> None:
    for stack in STACKS:
        pages = [demo_page(PROMPT, stack, index) for index in range(4)]
        assert len(set(pages)) == 4, stack
        for index, page in enumerate(pages):
            assert f'data-demo-variant="{index}"' in page
    colours = [
        re.findall(r"bg-(\w+)-600", demo_page(PROMPT, "html_tailwind", index))[0]
        for index in range(4)
    ]
    assert len(set(colours)) == 4
    css = [re.findall(r"--primary: (#\w+)", demo_page(PROMPT, "html_css", i))[0] for i in range(4)]
    assert len(set(css)) == 4


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("prompt", ["", PROMPT, HOSTILE, "Get started today" * 3, "x" * 2000])
def test_the_edit_target_occurs_exactly_once(stack: str, prompt: str) -> None:
    for variant in range(4):
        page = demo_page(prompt, stack, variant)
        assert page.count(CTA_OLD) == 1
        assert CTA_NEW not in page
        assert len(page.encode()) <= 16_000


# --- the script ----------------------------------------------------------------------------


def _tool_calls(turn: ScriptedTurn | None) -> list[CallTool]:
    assert turn is not None
    return [step for step in turn.steps if isinstance(step, CallTool)]


def _ok(call: CallTool) -> ExecutedTool:
    arguments = json.loads("".join(call.argument_chunks))
    return ExecutedTool(ToolCall(call.id, call.name, arguments), True, {"content": "ok"})


def _said(turn: ScriptedTurn) -> str:
    return "".join(chunk for step in turn.steps if isinstance(step, Say) for chunk in step.chunks)


def _play(
    script: TurnSource, failing: str | None = None
) -> tuple[list[list[str]], list[ScriptedTurn]]:
    """Plays a TurnSource the way the engine does; returns tool names per turn."""
    results: list[list[ExecutedTool]] = []
    names: list[list[str]] = []
    turns: list[ScriptedTurn] = []
    for index in range(10):
        turn = script(index, results)
        if turn is None:
            break
        turns.append(turn)
        calls = _tool_calls(turn)
        names.append([call.name for call in calls])
        if not calls:
            continue
        executed = [_ok(call) for call in calls]
        if failing is not None:
            executed = [
                ExecutedTool(e.call, False, {"error": "worker unavailable"})
                if e.call.name == failing
                else e
                for e in executed
            ]
        results.append(executed)
    return names, turns


def test_turn_zero_thinks_says_and_streams_create_file() -> None:
    script = demo_script(PROMPT, "bootstrap", 3, {"screenshot_preview"}, chunk_size=40)
    turn = script(0, [])
    assert turn is not None
    kinds = [type(step) for step in turn.steps]
    assert kinds == [Think, Say, CallTool]
    assert isinstance(turn.steps[0], Think)
    thinking = "".join(turn.steps[0].chunks)
    assert "coffee roastery" in thinking
    assert "Bootstrap" in thinking
    (call,) = _tool_calls(turn)
    assert call.id == "demo-3-create"
    assert call.name == "create_file"
    assert len(call.argument_chunks) > 50
    assert all(len(chunk) <= 40 for chunk in call.argument_chunks)
    arguments = json.loads("".join(call.argument_chunks))
    assert arguments == {"path": "index.html", "content": demo_page(PROMPT, "bootstrap", 3)}


def test_the_edit_replaces_text_that_is_in_the_page_once() -> None:
    script = demo_script(HOSTILE, "react_tailwind", 0, set())
    page = demo_page(HOSTILE, "react_tailwind", 0)
    first = _tool_calls(script(0, []))[0]
    edit_turn = script(1, [[_ok(first)]])
    (edit,) = _tool_calls(edit_turn)
    assert edit.name == "edit_file"
    arguments = json.loads("".join(edit.argument_chunks))
    assert arguments["count"] == 1
    assert page.count(arguments["old_text"]) == 1
    assert arguments["new_text"] != arguments["old_text"]
    edited = page.replace(arguments["old_text"], arguments["new_text"], 1)
    assert "Start your free 14-day trial" in edited


def test_with_screenshot_preview_the_script_checks_its_work() -> None:
    names, turns = _play(
        demo_script(PROMPT, "html_tailwind", 0, ["create_file", "screenshot_preview"])
    )
    assert names == [["create_file"], ["screenshot_preview"], ["edit_file"], []]
    screenshot = _tool_calls(turns[1])[0]
    assert json.loads("".join(screenshot.argument_chunks)) == {}
    assert screenshot.id == "demo-0-screenshot"


def test_without_screenshot_preview_it_goes_straight_to_the_edit() -> None:
    names, turns = _play(demo_script(PROMPT, "vue_tailwind", 1, ("create_file", "edit_file")))
    assert names == [["create_file"], ["edit_file"], []]
    summary = _said(turns[-1])
    assert "Landing page for a small coffee roastery" in summary
    assert "Vue" in summary


def test_a_failed_tool_ends_the_script_with_a_summary_of_the_problem() -> None:
    script = demo_script(PROMPT, "html_css", 2, {"screenshot_preview"})
    names, turns = _play(script, failing="screenshot_preview")
    assert names == [["create_file"], ["screenshot_preview"], []]
    last = _said(turns[-1])
    assert "screenshot_preview" in last
    assert "worker unavailable" in last
    # Asked again (an engine that keeps going), it stays silent instead of looping.
    results = [[_ok(_tool_calls(turns[0])[0])], [ExecutedTool(ToolCall("x", "s", {}), False, {})]]
    assert script(3, results) is None
    assert script(4, results) is None


def test_a_failed_create_stops_at_once() -> None:
    names, turns = _play(demo_script("", "html_css", 0, set()), failing="create_file")
    assert names == [["create_file"], []]
    assert "create_file" in _said(turns[-1])


def test_a_screenshot_without_text_is_described_as_a_recreation() -> None:
    turn = demo_script("", "html_tailwind", 0, set())(0, [])
    assert turn is not None
    assert isinstance(turn.steps[0], Think)
    assert "the screenshot recreated" in "".join(turn.steps[0].chunks)


def test_the_script_ends() -> None:
    script = demo_script(PROMPT, "ionic_tailwind", 0, set())
    assert script(99, []) is None
    assert script(-1, []) is None


# --- through a real ScriptedSession ----------------------------------------------------------


class _FakeFileTools:
    """Just enough of create_file / edit_file / screenshot_preview to check the script."""

    def __init__(self) -> None:
        self.content: str | None = None

    def run(self, call: ToolCall) -> ExecutedTool:
        args = call.arguments
        if call.name == "create_file":
            self.content = str(args["content"])
            return ExecutedTool(call, True, {"content": "Successfully created file."})
        if self.content is None:
            return ExecutedTool(call, False, {"error": "No file exists yet."})
        if call.name == "edit_file":
            if args["old_text"] not in self.content:
                return ExecutedTool(call, False, {"error": "old_text not found"})
            self.content = self.content.replace(args["old_text"], args["new_text"], 1)
            return ExecutedTool(call, True, {"content": "Successfully edited file."})
        return ExecutedTool(call, True, {"content": "Screenshots attached."})


async def _drive(session: ScriptedSession, tools: _FakeFileTools) -> list[StreamEvent]:
    events: list[StreamEvent] = []

    async def on_event(event: StreamEvent) -> None:
        events.append(event)

    for _ in range(10):
        turn = await session.stream_turn(on_event)
        if not turn.tool_calls:
            break
        session.append_tool_results(turn, [tools.run(call) for call in turn.tool_calls])
    else:
        pytest.fail("the demo script did not terminate")
    await session.close()
    return events


def _deltas(events: Sequence[StreamEvent], name: str) -> str:
    return "".join(
        e.arguments_delta for e in events if isinstance(e, ToolCallDelta) and e.name == name
    )


@pytest.mark.parametrize("stack", STACKS)
async def test_a_scripted_session_plays_the_demo_to_the_end(stack: str) -> None:
    tools = _FakeFileTools()
    script = demo_script(PROMPT, stack, 1, {"screenshot_preview", "edit_file"}, chunk_size=64)
    session = ScriptedSession(script=script, pace_s=0)

    events = await _drive(session, tools)

    page = demo_page(PROMPT, stack, 1)
    assert json.loads(_deltas(events, "create_file"))["content"] == page
    assert json.loads(_deltas(events, "screenshot_preview")) == {}
    assert [len(r) for r in session.tool_results] == [1, 1, 1]
    assert all(executed.ok for results in session.tool_results for executed in results)
    assert tools.content == page.replace(CTA_OLD, CTA_NEW)
    assert any(isinstance(e, ThinkingDelta) for e in events)
    said = "".join(e.text for e in events if isinstance(e, AssistantDelta))
    assert said.endswith("a sharper call to action and a footer.")
    assert session.total_cost_usd() == 0.0
    assert session.closed


async def test_a_scripted_session_stops_gracefully_when_the_edit_fails() -> None:
    tools = _FakeFileTools()
    session = ScriptedSession(script=demo_script(PROMPT, "html_tailwind", 0, ()), pace_s=0)

    async def on_event(event: StreamEvent) -> None:
        pass

    first = await session.stream_turn(on_event)
    # A tool worker that stored something else: the edit cannot find its target.
    tools.content = "<!DOCTYPE html><html></html>"
    session.append_tool_results(first, [ExecutedTool(first.tool_calls[0], True, {})])
    second = await session.stream_turn(on_event)
    session.append_tool_results(second, [tools.run(call) for call in second.tool_calls])
    third = await session.stream_turn(on_event)

    assert [c.name for c in second.tool_calls] == ["edit_file"]
    assert third.tool_calls == []
    assert "edit_file failed: old_text not found" in third.assistant_text
    assert (await session.stream_turn(on_event)).tool_calls == []
