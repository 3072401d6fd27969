"""What the engine hands back for replay: a large create_file's content as a placeholder,
and the file itself once when an edit then misses text the model could not see."""

from __future__ import annotations

from services.agent.providers.scripted import Say, ScriptedTurn, call_tool
from tests.agent.cores import Manager as GenerationManager
from tests.agent.test_engine import InProcessTools, request, run, scripted, settings

BIG = "<!DOCTYPE html><html><body>\n" + "<p>a row of the page</p>\n" * 200 + "</body></html>"
MISS = {"old_text": "not in the page", "new_text": "x"}


async def test_a_large_create_replays_as_a_placeholder_and_a_miss_shows_the_file_once() -> None:
    turns = [
        ScriptedTurn((call_tool("c1", "create_file", {"path": "index.html", "content": BIG}),)),
        ScriptedTurn((call_tool("e1", "edit_file", MISS),)),
        ScriptedTurn((call_tool("e2", "edit_file", MISS),)),
        ScriptedTurn((Say(("Done.",)),)),
    ]
    factory = scripted(turns)
    await run(GenerationManager(settings(), InProcessTools(), factory), request(variant_count=1))
    (created,), (missed,), (again,) = factory.sessions[0].tool_results
    assert created.call.arguments["content"] == BIG  # the call itself is what the model sent
    assert created.replay_arguments is not None
    assert created.replay_arguments["content"].startswith(f"[content elided: {len(BIG):,} ")
    assert missed.result["error"] == "old_text not found"
    assert missed.result["current_file"] == BIG
    assert missed.replay_arguments is None
    assert "current_file" not in again.result


async def test_a_small_create_replays_as_sent_and_a_miss_is_just_a_miss() -> None:
    small = "<!DOCTYPE html><html><body><h1>Hi</h1></body></html>"
    turns = [
        ScriptedTurn((call_tool("c1", "create_file", {"path": "index.html", "content": small}),)),
        ScriptedTurn((call_tool("e1", "edit_file", MISS),)),
        ScriptedTurn((Say(("Done.",)),)),
    ]
    factory = scripted(turns)
    await run(GenerationManager(settings(), InProcessTools(), factory), request(variant_count=1))
    (created,), (missed,) = factory.sessions[0].tool_results
    assert created.replay_arguments is None
    assert missed.result == {"error": "old_text not found", "old_text": MISS["old_text"]}
