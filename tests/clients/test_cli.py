"""`s2c generate` as a user runs it: a process talking gRPC to the real suite (demo model)."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc
from s2c.common.v1 import common_pb2

from services.agent.models import CATALOGUE
from services.agent.providers.registry import PRICES
from services.cli_view import GenerationView
from tests.clients import (
    GRPC_TOKEN,
    REPO,
    assert_complete_document,
    client_env,
    closed_port,
    file_names,
    locked_down,
    s2c,
    write_png,
)
from tests.fakes.openai_server import FakeOpenAI, TokenUsage, chat_turn, responses_turn
from tests.fakes.openai_server import Text as OText
from tests.processes import Processes, running_processes

on_suite = pytest.mark.asyncio(loop_scope="module")


def agent(suite: Processes) -> str:
    return f"127.0.0.1:{suite.agent.port}"


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """The events: every stdout line is one JSON object, an event or (last, once the
    variants are known) the summary; nothing else is there."""
    lines = [json.loads(line) for line in stdout.splitlines()]
    assert all(isinstance(e, dict) for e in lines)
    assert all("summary" not in e for e in lines[:-1])
    return [e for e in lines if "summary" not in e]


def json_summary(stdout: str) -> dict[str, Any]:
    last = json.loads(stdout.splitlines()[-1])
    assert isinstance(last, dict)
    summary: dict[str, Any] = last["summary"]
    return summary


def payload(event: dict[str, Any]) -> str:
    (kind,) = set(event) - {"generation_id", "sequence", "variant_index", "event_id"}
    return kind


@on_suite
async def test_text_prompt_shows_progress_writes_each_variant_and_exits_0(
    processes: Processes, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = await s2c(
        "generate", "A bakery landing page", "--agent", agent(processes), "--variants", "2",
        "--out", str(out), env={"COLUMNS": "160"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert file_names(out) == ["variant-1.html", "variant-2.html"]
    pages = [(out / f"variant-{n}.html").read_text() for n in (1, 2)]
    for index, page in enumerate(pages):
        assert_complete_document(page)
        assert "A bakery landing page" in page
        assert f'data-demo-variant="{index}"' in page  # each file is its own variant
    # Not a terminal: one line per step on stderr, then the summary table on stdout.
    assert "Traceback" not in result.stderr
    for step in ("[variant 1] create_file …", "[variant 2] edit_file ok", "[variant 2] completed"):
        assert step in result.stderr
    assert result.stdout.count("completed") >= 3  # the title and one row per variant
    assert "demo" in result.stdout
    assert f"wrote {out / 'variant-1.html'}" in result.lines
    assert f"wrote {out / 'variant-2.html'}" in result.lines


@on_suite
async def test_image_input_json_streams_every_event_as_one_line(
    processes: Processes, tmp_path: Path
) -> None:
    shot = write_png(tmp_path / "screenshot.png")
    out = tmp_path / "out"
    result = await s2c(
        "generate", str(shot), "--json", "--stack", "bootstrap", "--variants", "1",
        "--agent", agent(processes), "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    events = json_lines(result.stdout)
    assert [int(e["sequence"]) for e in events] == list(range(1, len(events) + 1))
    assert len({e["generation_id"] for e in events}) == 1
    # Defaults are printed too; variant_index has presence: unset for generation-wide events.
    wide = {"variant_count", "generation_error", "generation_complete"}
    assert all(("variant_index" in e) == (payload(e) not in wide) for e in events)
    assert all("event_id" in e for e in events)
    # A code_delta's ids, empty on the wire, are filled in from the stream.
    calls = {e["event_id"] for e in events if payload(e) == "tool_start"} - {""}
    assert {e["event_id"] for e in events if payload(e) == "code_delta"} <= calls
    assert payload(events[0]) == "variant_count"
    assert events[0]["variant_count"] == {"count": 1, "models": ["demo"]}
    assert payload(events[-1]) == "generation_complete"
    assert events[-1]["generation_complete"] == {"status": "RUN_STATUS_COMPLETED"}
    kinds = [payload(e) for e in events]
    for kind in ("thinking_delta", "tool_start", "code_delta", "tool_result", "variant_complete"):
        assert kind in kinds
    # The screenshot went as an image: the demo model says so (a text prompt would be
    # quoted back instead).
    thinking = "".join(e["thinking_delta"]["text"] for e in events if "thinking_delta" in e)
    assert "the screenshot recreated" in thinking
    snapshots = [e["code_snapshot"]["content"] for e in events if "code_snapshot" in e]
    page = (out / "variant-1.html").read_text()
    assert page == snapshots[-1]
    assert_complete_document(page)
    assert "bootstrap" in page.lower()


@on_suite
async def test_live_progress_on_a_terminal(processes: Processes, tmp_path: Path) -> None:
    result = await s2c(
        "generate", "A bakery landing page", "--agent", agent(processes), "--variants", "1",
        "--out", str(tmp_path),
        env={"TTY_INTERACTIVE": "1", "TTY_COMPATIBLE": "1", "COLUMNS": "160"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # The table is redrawn in place (cursor up, erase line) and cleared at the end; its
    # last frame shows the finished variant.
    assert "\x1b[1A\x1b[2K" in result.stderr
    assert "s2c generation " in result.stderr
    assert "completed" in result.stderr
    for column in ("model", "state", "tool", "code"):
        assert column in result.stderr
    assert "[variant 1]" not in result.stderr  # no step log on a terminal
    assert (tmp_path / "variant-1.html").is_file()


@on_suite
async def test_a_failed_variant_exits_1_and_the_others_are_still_written(
    processes: Processes, tmp_path: Path
) -> None:
    # No Anthropic key: the pinned Claude variant fails at once, the demo one completes.
    result = await s2c(
        "generate", "A bakery landing page", "--agent", agent(processes), "--variants", "2",
        "--model", "demo", "--model", "claude-sonnet-4-6", "--out", str(tmp_path),
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert file_names(tmp_path) == ["variant-1.html"]
    assert_complete_document((tmp_path / "variant-1.html").read_text())
    assert "Anthropic API key is missing" in result.stderr
    assert "s2c: 1 of 2 variant(s) failed: 2" in result.stderr
    assert "claude-sonnet-4-6" in result.stdout
    assert "failed" in result.stdout


@on_suite
async def test_a_failed_generation_exits_1(processes: Processes, tmp_path: Path) -> None:
    result = await s2c(
        "generate", "A bakery landing page", "--agent", agent(processes), "--json",
        "--variants", "1", "--model", "claude-sonnet-4-6", "--out", str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 1
    events = json_lines(result.stdout)
    assert payload(events[-2]) == "generation_error"
    assert events[-1]["generation_complete"] == {"status": "RUN_STATUS_FAILED"}
    assert "s2c: generation failed: " in result.stderr
    assert file_names(tmp_path) == []


@on_suite
async def test_a_rejected_request_exits_2_with_the_agents_reason(
    processes: Processes, tmp_path: Path
) -> None:
    result = await s2c(
        "generate", "A bakery landing page", "--agent", agent(processes), "--model", "gpt-0",
        "--json", "--out", str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stdout == ""
    assert "s2c: the agent rejected the request: models[0]: Unknown model: gpt-0" in (result.stderr)
    assert "Traceback" not in result.stderr


async def test_an_unreachable_agent_exits_2_with_a_clear_message(tmp_path: Path) -> None:
    address = f"127.0.0.1:{closed_port()}"
    result = await s2c("generate", "A bakery page", "--agent", address, "--out", str(tmp_path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"s2c: cannot reach the agent at {address}" in result.stderr
    assert "Traceback" not in result.stderr
    # The address also comes from the environment, as the other services read it.
    from_env = await s2c(
        "generate", "A bakery page", "--out", str(tmp_path), env={"S2C_AGENT_ADDR": address}
    )
    assert from_env.returncode == 2
    assert f"cannot reach the agent at {address}" in from_env.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["A page", "--stack", "cobol"], "unknown stack 'cobol'; one of: html_tailwind, "),
        (["missing.png"], "no such image file: missing.png"),
        (["notes.txt"], "notes.txt is not a png, jpeg, webp or gif image"),
        (["   "], "the prompt is empty"),
        (["A page", "--variants", "-1"], "--variants must be 0"),
    ],
)
async def test_bad_usage_exits_2_before_any_call(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "notes.txt").write_text("not an image")
    address = f"127.0.0.1:{closed_port()}"  # never reached: the checks come first
    result = await s2c("generate", *args, "--agent", address, cwd=tmp_path)
    assert result.returncode == 2
    assert f"s2c: {message}" in result.stderr
    assert "cannot reach" not in result.stderr
    assert not (tmp_path / "s2c-out").exists()


async def test_ctrl_c_cancels_the_generation_on_the_agent(tmp_path: Path) -> None:
    # A slow demo model, so the generation is surely still running at Ctrl+C.
    async with running_processes(tmp_path / "suite", {"S2C_DEMO_PACE_MS": "500"}) as suite:
        out = tmp_path / "out"
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "services.cli", "generate", "A bakery landing page",
            "--json", "--variants", "2", "--agent", agent(suite), "--out", str(out),
            cwd=REPO, env=client_env(), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert process.stdout is not None
        first = json.loads(await asyncio.wait_for(process.stdout.readline(), 60))
        assert payload(first) == "variant_count"
        generation_id = first["generation_id"]
        process.send_signal(signal.SIGINT)
        rest, err = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 128 + signal.SIGINT, err.decode()
        assert f"s2c: cancelled generation {generation_id}" in err.decode()
        assert "Traceback" not in err.decode()
        events = [first, *json_lines(rest.decode())]
        assert all(payload(e) != "generation_complete" for e in events)
        assert file_names(out) == []

        # On the agent, the generation ended as cancelled (its full event log says so).
        async with grpc.aio.insecure_channel(agent(suite)) as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            watch = pb.WatchGenerationRequest(generation_id=generation_id)
            call = stub.WatchGeneration(watch, timeout=30)
            log = [event async for message in call for event in message.events]
            record = await stub.GetGeneration(
                pb.GetGenerationRequest(generation_id=generation_id), timeout=30
            )
    assert log[-1].generation_complete.status == pb.RUN_STATUS_CANCELLED
    assert record.generation.status == pb.RUN_STATUS_CANCELLED


PAGE = "<!DOCTYPE html><html><body><h1>Hello from a model</h1></body></html>"


async def test_each_variants_tokens_and_cost_and_unpriced_models(tmp_path: Path) -> None:
    # Two pinned variants on one fake server: a priced OpenAI model and a local model
    # the agent has no price for. Both report cached input, as the APIs do (the prompt
    # count includes the cached part). Each variant is one turn answering with the page.
    model = next(s for s in CATALOGUE.values() if s.provider == "openai" and s.api_name in PRICES)
    price = PRICES[model.api_name]
    cost = (400 * price.input + 600 * price.cache_read + 500 * price.output) / 1e6
    async with FakeOpenAI() as fake:
        for _ in range(2):  # --json, then the human-readable run
            fake.add_response(responses_turn([OText([PAGE])], usage=TokenUsage(1000, 500, 600)))
            fake.add_chat(chat_turn([OText([PAGE])], usage=TokenUsage(800, 200, 300)))
        env = {
            "OPENAI_API_KEY": "sk-cli-usage-test",
            "OPENAI_BASE_URL": fake.base_url,
            "S2C_LOCAL_MODELS": "tiny",
            "S2C_LOCAL_BASE_URL": fake.base_url,
        }
        async with running_processes(tmp_path / "suite", env) as suite:
            args = ["generate", "A greeting page", "--agent", agent(suite), "--variants", "2"]
            args += ["--model", model.id, "--model", "local:tiny"]
            result = await s2c(*args, "--json", "--out", str(tmp_path / "json"))
            assert result.returncode == 0, result.stderr
            summary = json_summary(result.stdout)
            async with grpc.aio.insecure_channel(agent(suite)) as channel:
                stub = pb_grpc.AgentServiceStub(channel)
                request = pb.GetGenerationRequest(generation_id=summary["generation_id"])
                record = (await stub.GetGeneration(request, timeout=30)).generation
            shown = await s2c(*args, "--out", str(tmp_path / "text"), env={"COLUMNS": "200"})

    assert summary["status"] == "completed"
    variants = summary["variants"]
    assert [(v["model"], v["state"]) for v in variants] == [
        (model.id, "completed"),
        ("local:tiny", "completed"),
    ]
    priced = {
        "input_tokens": 400,
        "cached_tokens": 600,
        "cache_write_tokens": 0,
        "output_tokens": 500,
        "cost_usd": pytest.approx(cost),
        "priced": True,
    }
    assert variants[0]["usage"] == priced
    unpriced = {
        "input_tokens": 500,
        "cached_tokens": 300,
        "cache_write_tokens": 0,
        "output_tokens": 200,
        "cost_usd": None,  # not 0: nobody knows what it cost
        "priced": False,
    }
    assert variants[1]["usage"] == unpriced
    # The summary holds the agent's totals, the same the variant_complete events carry.
    events = json_lines(result.stdout)
    complete = {
        e["variant_index"]: e["variant_complete"]["usage"]
        for e in events
        if "variant_complete" in e
    }
    assert complete[0]["priced"] is True
    assert complete[1] == {
        "input_tokens": "500",  # int64 in proto JSON is a string
        "output_tokens": "200",
        "cache_read_tokens": "300",
        "cache_write_tokens": "0",
        "total_tokens": "1000",
        "cost_usd": 0.0,
        "priced": False,
    }

    # The run record keeps each variant's totals and whether it was priced.
    stored = {v.variant_index: v.usage for v in record.variants}
    assert stored[0] == common_pb2.Usage(
        input_tokens=400,
        cache_read_tokens=600,
        output_tokens=500,
        total_tokens=1500,
        cost_usd=stored[0].cost_usd,
        priced=True,
    )
    assert stored[0].cost_usd == pytest.approx(cost)
    assert stored[1] == common_pb2.Usage(
        input_tokens=500, cache_read_tokens=300, output_tokens=200, total_tokens=1000
    )  # priced false, cost 0: the record says unpriced

    # Without --json: the step line per variant and the summary table say the same.
    assert shown.returncode == 0, shown.stderr
    assert "[variant 1] completed" in shown.stderr
    assert f"400 in + 600 cached / 500 out tokens · ${cost:.4f}" in shown.stderr
    assert "500 in + 300 cached / 200 out tokens · unpriced" in shown.stderr
    rows = [line for line in shown.lines if "local:tiny" in line or model.id in line]
    assert any("400 in + 600 cached / 500 out" in r and f"${cost:.4f}" in r for r in rows)
    assert any("500 in + 300 cached / 200 out" in r and "unpriced" in r for r in rows)
    assert "$0.0000" not in shown.stdout


async def test_a_locked_down_suite_is_called_with_tls_and_the_token(tmp_path: Path) -> None:
    lock = locked_down(tmp_path / "pki")
    async with running_processes(tmp_path / "data", lock.server_env) as suite:
        args = ["generate", "A bakery landing page", "--agent", agent(suite), "--json"]
        result = await s2c(
            *args, "--variants", "1", "--out", str(tmp_path / "out"), env=lock.client_env
        )
        no_token = await s2c(
            *args, "--out", str(tmp_path / "no-token"),
            env={"S2C_GRPC_TLS_CA": lock.client_env["S2C_GRPC_TLS_CA"]},
        )  # fmt: skip
        plaintext = await s2c(
            *args, "--out", str(tmp_path / "plaintext"), env={"S2C_GRPC_TOKEN": GRPC_TOKEN}
        )
    assert result.returncode == 0, result.stderr
    assert json_lines(result.stdout)[-1]["generation_complete"] == {
        "status": "RUN_STATUS_COMPLETED"
    }
    assert_complete_document((tmp_path / "out" / "variant-1.html").read_text())
    assert no_token.returncode == 2
    assert "refused the call" in no_token.stderr
    assert "set S2C_GRPC_TOKEN" in no_token.stderr
    assert plaintext.returncode == 2
    assert "cannot reach the agent" in plaintext.stderr
    for failed in (no_token, plaintext):
        assert failed.stdout == ""
        assert GRPC_TOKEN not in failed.stderr
        assert "Traceback" not in failed.stderr


def event(variant: int, **payload: Any) -> pb.GenerationEvent:
    return pb.GenerationEvent(generation_id="g", variant_index=variant, **payload)


def test_the_view_follows_code_deltas_in_code_points_and_snapshots() -> None:
    view = GenerationView()
    view.apply(event(0, variant_count=pb.VariantCount(count=2, models=["demo", "m2"])))
    assert [(v.model, v.state) for v in view.variants] == [("demo", "running"), ("m2", "running")]
    view.apply(event(1, tool_start=pb.ToolStart(name="create_file")))
    view.apply(event(1, code_delta=pb.CodeDelta(offset=0, text="<p>🍞🥐")))
    view.apply(event(1, code_delta=pb.CodeDelta(offset=5, text="🥖</p>")))
    # Offsets count code points: "<p>🍞" is 4, so offset 5 keeps the croissant.
    assert view.variants[1].code == "<p>🍞🥐🥖</p>"
    assert view.variants[1].code_bytes == len("<p>🍞🥐🥖</p>".encode())
    assert view.variants[1].tool == "create_file"
    view.apply(event(1, code_delta=pb.CodeDelta(offset=3, text="x")))
    assert view.variants[1].code == "<p>x"
    view.apply(event(1, code_snapshot=pb.CodeSnapshot(path="index.html", content="<html/>")))
    view.apply(event(1, tool_result=pb.ToolResult(name="create_file", ok=True)))
    assert (view.variants[1].code, view.variants[1].tool) == ("<html/>", "")
    assert view.variants[1].spent is None  # no turn ended yet: no usage, not zero usage
    for cost in (0.5, 0.25):
        usage = common_pb2.Usage(input_tokens=10, output_tokens=5, cost_usd=cost, priced=True)
        view.apply(event(1, usage=usage))
    assert view.variants[1].usage.input_tokens == 20
    assert view.variants[1].usage.cost_usd == 0.75
    assert view.variants[1].usage.priced
    view.apply(event(0, variant_error=pb.VariantError(message="no key")))
    view.apply(event(1, variant_complete=pb.VariantComplete()))
    assert [(v.state, v.note) for v in view.variants] == [("failed", "no key"), ("completed", "")]
    assert view.outcome == "running"  # no generation_complete yet
    complete = pb.GenerationComplete(status=pb.RUN_STATUS_COMPLETED)
    view.apply(event(0, generation_complete=complete))
    assert view.outcome == "completed"
