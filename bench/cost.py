"""Input cost of a create and three updates, as the upstream UI sends them, per provider.

    .venv/bin/python bench/cost.py

The scenario: a create from a screenshot (4 variants), then three updates of the first
variant's lineage (2 variants each): 10 variants of two model requests each (a tool
call, then the closing summary), 20 requests per provider, a 30 KB page. Each update
carries what the UI sends: the history (the create's screenshot message, every earlier
version as an assistant message, each instruction) and `fileState`. The model is a
fake server (tests/fakes/) that emulates the provider's prompt cache as documented
(docs/provider-wire-formats.md, "Prompt caching") and reports it in usage; its
scripted replies write the page with `create_file` and change it with `edit_file`,
and the production file tools apply those calls.

Every request runs twice in the same run: through our prompts and sessions, and as
the baseline "replay everything, no cache key" (`collapse_versions=False`,
`prompt_caching=False`, no `replay_arguments`: the earlier versions and each
`create_file`'s content in full, no `prompt_cache_key`, no `cache_control`), each
against its own fresh fake. Per request: input tokens sent
(cached ones included), cached (read; Anthropic's writes are shown after a `+`) and
billed-equivalent input tokens (cache reads and writes at the model's price relative
to its input price, from the provider registry). Variants run one after another,
so every variant's first request finds the previous one's prefix cached; real
variants run in parallel, and the first requests of one generation may all miss.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PIL import Image

from services.agent.domain import FileState, GenerationRequest, HistoryMessage, Prompt
from services.agent.pricing import Usage
from services.agent.prompts import build_prompt_messages, current_file
from services.agent.providers.anthropic import AnthropicSession
from services.agent.providers.base import (
    ExecutedTool,
    ProviderName,
    ProviderSession,
    ProviderTurn,
    SessionConfig,
    StreamEvent,
    ToolSpec,
)
from services.agent.providers.gemini import GeminiSession
from services.agent.providers.openai_chat import OpenAIChatSession
from services.agent.providers.openai_responses import OpenAIResponsesSession
from services.agent.providers.registry import PRICES
from services.agent.providers.replay import replay_arguments
from services.tools.definitions import TOOL_DEFINITIONS
from services.tools.file_tools import create_file, edit_file
from services.tools.types import FileState as ToolFile
from services.tools.types import ToolContext
from tests.fakes import anthropic_server as fa
from tests.fakes import gemini_server as fg
from tests.fakes import openai_server as fo

OFFERED = ("create_file", "edit_file", "retrieve_option", "save_assets", "screenshot_preview")
TOOLS = tuple(
    ToolSpec(d.name, d.description, d.input_schema) for d in TOOL_DEFINITIONS if d.name in OFFERED
)
CREATE_VARIANTS = 4
UPDATE_VARIANTS = 2
INSTRUCTIONS = ("Make the hero title bigger", "Add a pricing row", "Put a note in the footer")
PAGE_BYTES = 30_000


def page(variant: int) -> str:
    """A ~30 KB Tailwind page; each variant's differs, as real variants do."""
    rows: list[str] = []
    n = 0
    while sum(len(row) for row in rows) < PAGE_BYTES - 600:
        rows.append(
            f'    <section class="p-6 grid gap-4 md:grid-cols-3" id="s{variant}-{n}">'
            f'<h2 class="text-xl font-semibold">Feature {n} of variant {variant}</h2>'
            f'<p class="text-gray-600">Row {n}: fast, reliable and simple.</p></section>\n'
        )
        n += 1
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<script src="https://cdn.tailwindcss.com"></script>\n</head>\n<body>\n'
        f'  <h1 class="text-3xl">Acme {variant}</h1>\n{"".join(rows)}'
        "  <footer>Acme Inc.</footer>\n</body>\n</html>\n"
    )


def edit_args(update: int) -> dict[str, Any]:
    """The scripted `edit_file` call of update `update` (1-based)."""
    old, new = {
        1: ('class="text-3xl"', 'class="text-5xl"'),
        2: ("  <footer>", '  <section id="pricing">Pricing: $9</section>\n  <footer>'),
        3: ("Acme Inc.</footer>", "Acme Inc. Made with care.</footer>"),
    }[update]
    return {"path": "index.html", "old_text": old, "new_text": new}


def screenshot() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (1280, 800), (240, 244, 250)).save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


# ---- one provider behind its fake ------------------------------------------------------


@dataclass(frozen=True)
class Provider:
    name: str
    api_name: str  # priced in services/agent/providers/registry.py
    note: str = ""


PROVIDERS = (
    Provider("OpenAI Responses", "gpt-5.5"),
    Provider("Anthropic", "claude-opus-4-8"),
    Provider("Gemini", "gemini-3-flash-preview"),
    # Local servers are unpriced; priced as OpenAI's own Chat Completions model.
    Provider("Chat Completions", "gpt-5.4-mini", "priced as gpt-5.4-mini"),
)


class Fake:
    """One fake server with cache emulation on, scripting turns in its own format."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.server: Any = None
        self.base_url = ""

    async def start(self) -> None:
        kind = self.provider.name
        if kind == "Anthropic":
            self.server = fa.FakeAnthropic(emulate_cache=True)
        elif kind == "Gemini":
            self.server = fg.FakeGemini(emulate_cache=True)
        else:
            self.server = fo.FakeOpenAI(emulate_cache=True)
        self.base_url = await self.server.start()

    def script(self, call_id: str, name: str, args: dict[str, Any], summary: str) -> None:
        """A tool-calling turn, then the closing summary."""
        kind, server = self.provider.name, self.server
        raw = json.dumps(args)
        if kind == "Anthropic":
            server.add_turn(fa.Text.of("On it."), fa.ToolUse.of(call_id, name, args))
            server.add_turn(fa.Text.of(summary))
        elif kind == "Gemini":
            server.add_turn(fg.Say("On it."), fg.Call(name, args, id=call_id))
            server.add_turn(fg.Say(summary))
        elif kind == "Chat Completions":
            usage = fo.TokenUsage(output=200)
            server.add_chat(fo.chat_turn([fo.FunctionCall(call_id, name, raw)], usage=usage))
            server.add_chat(fo.chat_turn([fo.Text([summary])], usage=usage))
        else:
            items: list[fo.Item] = [fo.Text(["On it."]), fo.FunctionCall(call_id, name, raw)]
            server.add_response(fo.responses_turn(items, response_id=f"resp_{call_id}"))
            server.add_response(fo.responses_turn([fo.Text([summary])]))

    def session(self, config: SessionConfig, caching: bool) -> ProviderSession:
        kind = self.provider.name
        if kind == "Anthropic":
            return AnthropicSession(config, prompt_caching=caching)
        if kind == "Gemini":
            return GeminiSession(config)  # implicit caching: nothing to send
        if kind == "Chat Completions":
            return OpenAIChatSession(config, prompt_caching=caching)
        return OpenAIResponsesSession(config, prompt_caching=caching)


# ---- the scenario ----------------------------------------------------------------------


@dataclass
class Row:
    label: str
    usage: Usage

    @property
    def sent(self) -> int:
        u = self.usage
        return u.input_tokens + u.cache_read_tokens + u.cache_write_tokens


@dataclass
class Run:
    rows: list[Row] = field(default_factory=list)
    final_page: str = ""
    first_requests: list[int] = field(default_factory=list)  # each update's first, sent


async def _variant(
    fake: Fake,
    request: GenerationRequest,
    label: str,
    call: tuple[str, dict[str, Any]],
    caching: bool,
    run: Run,
) -> str:
    """Runs one variant's two requests; returns its page."""
    messages = build_prompt_messages(request, tools=OFFERED, collapse_versions=caching)
    config = SessionConfig(
        provider=ProviderName(fake.provider.name, "KEY"),
        model_id=fake.provider.api_name,
        api_name=fake.provider.api_name,
        effort=None,
        api_key="bench-key",
        base_url=fake.base_url,
        messages=tuple(messages),
        tools=TOOLS,
        max_retries=0,
    )
    name, args = call
    call_id = f"call_{label.replace(' ', '_')}"
    fake.script(call_id, name, args, "Done.")
    session = fake.session(config, caching)
    seed = current_file(request)
    file = ToolFile(seed.path, seed.content) if seed is not None else None

    async def ignore(event: StreamEvent) -> None:
        del event

    try:
        turn: ProviderTurn = await session.stream_turn(ignore)
        run.rows.append(Row(f"{label} #1", turn.usage))
        tool_call = turn.tool_calls[0]
        tool = create_file if tool_call.name == "create_file" else edit_file
        outcome = await tool(tool_call.arguments, file, ToolContext())
        if not outcome.ok or outcome.updated_file is None:
            raise SystemExit(f"{label}: {tool_call.name} failed: {outcome.result}")
        # As the engine does; the baseline replays the call's arguments as sent.
        replay = replay_arguments(tool_call, True) if caching else None
        done = ExecutedTool(tool_call, True, outcome.result, replay_arguments=replay)
        session.append_tool_results(turn, [done])
        closing = await session.stream_turn(ignore)
        run.rows.append(Row(f"{label} #2", closing.usage))
    finally:
        await session.close()
    return outcome.updated_file.content


async def scenario(provider: Provider, caching: bool) -> Run:
    fake = Fake(provider)
    await fake.start()
    run = Run()
    try:
        shot = screenshot()
        create = GenerationRequest("create", prompt=Prompt(images=(shot,)))
        pages = [
            await _variant(
                fake, create, f"create v{i + 1}", ("create_file", _create(i)), caching, run
            )
            for i in range(CREATE_VARIANTS)
        ]
        # The UI's history: the create's raw user message (no text, the screenshot).
        history: tuple[HistoryMessage, ...] = (HistoryMessage("user", "", images=(shot,)),)
        code = pages[0]
        for number, instruction in enumerate(INSTRUCTIONS, 1):
            history += (HistoryMessage("assistant", code), HistoryMessage("user", instruction))
            update = replace(
                create,
                generation_type="update",
                prompt=Prompt(text=instruction),
                history=history,
                file_state=FileState("index.html", code),
            )
            start = len(run.rows)
            codes = [
                await _variant(
                    fake,
                    update,
                    f"update {number} v{i + 1}",
                    ("edit_file", edit_args(number)),
                    caching,
                    run,
                )
                for i in range(UPDATE_VARIANTS)
            ]
            run.first_requests.append(run.rows[start].sent)
            code = codes[0]
        run.final_page = code
    finally:
        await fake.server.stop()
    return run


def _create(variant: int) -> dict[str, Any]:
    return {"path": "index.html", "content": page(variant)}


# ---- report ----------------------------------------------------------------------------


def billed(provider: Provider, usage: Usage) -> float:
    """Input tokens at the input price: cache reads and writes at their relative price."""
    price = PRICES[provider.api_name]
    return (
        usage.input_tokens
        + usage.cache_read_tokens * price.cache_read / price.input
        + usage.cache_write_tokens * price.cache_write / price.input
    )


def _cached(usage: Usage) -> str:
    write = f"+{usage.cache_write_tokens:,}w" if usage.cache_write_tokens else ""
    return f"{usage.cache_read_tokens:,}{write}"


def report(provider: Provider, ours: Run, naive: Run) -> dict[str, float]:
    title = f"{provider.name} ({provider.api_name}{', ' + provider.note if provider.note else ''})"
    print(f"\n## {title}\n")
    head = ("request", "sent", "cached", "billed", "naive sent", "naive cached", "naive billed")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for a, b in zip(ours.rows, naive.rows, strict=True):
        cells = (
            a.label,
            f"{a.sent:,}",
            _cached(a.usage),
            f"{billed(provider, a.usage):,.0f}",
            f"{b.sent:,}",
            _cached(b.usage),
            f"{billed(provider, b.usage):,.0f}",
        )
        print("| " + " | ".join(cells) + " |")
    sent = sum(r.sent for r in ours.rows), sum(r.sent for r in naive.rows)
    paid = (
        sum(billed(provider, r.usage) for r in ours.rows),
        sum(billed(provider, r.usage) for r in naive.rows),
    )
    firsts = ours.first_requests
    flat = firsts[-1] / firsts[0]
    same = ours.final_page == naive.final_page
    applied = all(edit_args(n)["new_text"] in ours.final_page for n in range(1, 4))
    print(
        f"\ntotal: sent {sent[0]:,} vs {sent[1]:,} ({sent[0] / sent[1]:.2f}x), "
        f"billed-equivalent {paid[0]:,.0f} vs {paid[1]:,.0f} ({paid[0] / paid[1]:.2f}x); "
        f"updates' first requests {', '.join(f'{n:,}' for n in firsts)} tokens "
        f"(3rd/1st {flat:.2f}; naive {', '.join(f'{n:,}' for n in naive.first_requests)}); "
        f"final page the same: {'yes' if same else 'NO'}, every edit applied: "
        f"{'yes' if applied else 'NO'}"
    )
    print(
        f"billed-equivalent against no cache at all (the naive requests' sent tokens): "
        f"{paid[0] / sent[1]:.2f}x"
    )
    return {
        "sent": sent[0] / sent[1],
        "billed": paid[0] / paid[1],
        "flat": flat,
        "uncached": paid[0] / sent[1],
    }


def check(name: str, ratios: dict[str, float]) -> list[str]:
    misses = []
    if ratios["billed"] > 0.5:
        misses.append(f"{name}: billed-equivalent {ratios['billed']:.2f}x > 0.5x")
    if ratios["sent"] > 0.6:
        misses.append(f"{name}: sent {ratios['sent']:.2f}x > 0.6x")
    if not 0.9 <= ratios["flat"] <= 1.1:
        misses.append(f"{name}: update size 3rd/1st {ratios['flat']:.2f}, not within 10%")
    return misses


async def main(selected: Sequence[Provider], out: Callable[[str], None] = print) -> int:
    os.environ.setdefault("NO_PROXY", "127.0.0.1")
    print("# Input tokens: create + 3 updates (4 + 2 + 2 + 2 variants, 20 requests)")
    print("(tokens = characters / 4 of the rendered request; an image counts 1,000)")
    misses: list[str] = []
    summary: list[tuple[str, dict[str, float]]] = []
    for provider in selected:
        ours = await scenario(provider, caching=True)
        naive = await scenario(provider, caching=False)
        ratios = report(provider, ours, naive)
        summary.append((provider.name, ratios))
        misses += check(provider.name, ratios)
    print("\n| provider | sent vs naive | billed vs naive | billed vs no cache | 3rd/1st update |")
    print("|---|---|---|---|---|")
    for name, r in summary:
        print(
            f"| {name} | {r['sent']:.2f}x | {r['billed']:.2f}x | {r['uncached']:.2f}x "
            f"| {r['flat']:.2f} |"
        )
    out(
        "\ntargets (billed ≤ 0.5x, sent ≤ 0.6x, updates flat within 10%): "
        + ("all met" if not misses else "missed: " + "; ".join(misses))
    )
    return 0


if __name__ == "__main__":
    asyncio.run(main(PROVIDERS))
