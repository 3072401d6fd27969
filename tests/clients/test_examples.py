"""The polyglot examples in `examples/` against the real suite (demo model): the Node
client (@grpc/grpc-js, protos loaded at runtime) and the grpcurl script (reflection)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import pytest_asyncio

from tests.clients import (
    GRPC_TOKEN,
    REPO,
    assert_complete_document,
    closed_port,
    file_names,
    json_values,
    locked_down,
    run,
    write_png,
)
from tests.processes import Processes, running_processes

pytestmark = pytest.mark.asyncio(loop_scope="module")

NODE_EXAMPLE = REPO / "examples" / "node"
GRPCURL_SCRIPT = REPO / "examples" / "grpcurl" / "generate.sh"
GRPCURL = REPO / ".venv" / "bin" / "grpcurl"
EVENT_LINE = re.compile(r"^#(\d+) \[(generation|variant \d+)\] ([a-z_]+)(?: (.*))?$")


def node_deps_installed() -> bool:
    installed = NODE_EXAMPLE / "node_modules" / ".package-lock.json"
    lock = NODE_EXAMPLE / "package-lock.json"
    return installed.is_file() and installed.stat().st_mtime >= lock.stat().st_mtime


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def node() -> str:
    """`node`, with the example's locked dependencies installed (a fresh clone has none)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    assert node, "the Node example needs node on PATH"
    assert npm, "the Node example needs npm on PATH"
    if not node_deps_installed():
        installed = await run(
            npm, "ci", "--no-audit", "--no-fund", "--loglevel=error", cwd=NODE_EXAMPLE,
            time_limit=300,
        )  # fmt: skip
        assert installed.returncode == 0, installed.stderr
        assert node_deps_installed()
    return node


def agent(suite: Processes) -> str:
    return f"127.0.0.1:{suite.agent.port}"


def event_lines(stdout: str) -> list[tuple[int, str, str, str]]:
    """The Node example's `#SEQ [SCOPE] KIND DETAIL` lines, parsed."""
    parsed = []
    for line in stdout.splitlines():
        if line.startswith("wrote "):
            continue
        match = EVENT_LINE.match(line)
        assert match, line
        sequence, scope, kind, detail = match.groups()
        parsed.append((int(sequence), scope, kind, detail or ""))
    return parsed


async def test_node_example_streams_a_text_generation_and_writes_each_variant(
    node: str, processes: Processes, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = await run(
        node, "examples/node/generate.mjs", "--variants", "2", "--out", str(out),
        "A bakery landing page",
        env={"S2C_AGENT_ADDR": agent(processes)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    events = event_lines(result.stdout)
    assert [e[0] for e in events] == list(range(1, len(events) + 1))
    assert events[0][1:] == ("generation", "variant_count", "2 variant(s): demo, demo")
    assert events[-1][1:] == ("generation", "generation_complete", "RUN_STATUS_COMPLETED")
    kinds = {(scope, kind) for _, scope, kind, _ in events}
    for scope in ("variant 1", "variant 2"):
        for kind in ("tool_start", "code_delta", "tool_result", "variant_complete"):
            assert (scope, kind) in kinds
    # Tool inputs (google.protobuf.Struct) print as plain JSON.
    assert any(
        kind == "tool_start" and detail.startswith('create_file {"')
        for _, _, kind, detail in events
    )
    assert file_names(out) == ["variant-1.html", "variant-2.html"]
    for n in (1, 2):
        assert f"wrote {out / f'variant-{n}.html'}" in result.lines
        page = (out / f"variant-{n}.html").read_text()
        assert_complete_document(page)
        assert "A bakery landing page" in page
        assert f'data-demo-variant="{n - 1}"' in page


async def test_node_example_sends_an_image(node: str, processes: Processes, tmp_path: Path) -> None:
    shot = write_png(tmp_path / "shot.png")
    out = tmp_path / "out"
    result = await run(
        node, str(NODE_EXAMPLE / "generate.mjs"), "--variants", "1", "--stack", "bootstrap",
        "--out", str(out), str(shot),
        env={"S2C_AGENT_ADDR": agent(processes)}, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    events = event_lines(result.stdout)
    assert events[-1][2:] == ("generation_complete", "RUN_STATUS_COMPLETED")
    # Thinking deltas print as JSON strings, shortened to one display line each (the agent
    # merges a burst of deltas into one event, so a line can be cut): read them as text.
    thinking = " ".join(detail for _, _, kind, detail in events if kind == "thinking_delta")
    assert "the screenshot recreated" in thinking  # an image, not the path as a prompt
    page = (out / "variant-1.html").read_text()
    assert_complete_document(page)
    assert "bootstrap" in page.lower()


async def test_node_example_exit_codes(node: str, processes: Processes, tmp_path: Path) -> None:
    # Every variant fails (no Anthropic key): the generation fails, nothing is written.
    failed = await run(
        node, "examples/node/generate.mjs", "--variants", "1", "--model", "claude-sonnet-4-6",
        "--out", str(tmp_path), "A bakery landing page",
        env={"S2C_AGENT_ADDR": agent(processes)},
    )  # fmt: skip
    assert failed.returncode == 1
    assert "generation_complete RUN_STATUS_FAILED" in failed.lines[-1]
    assert "Anthropic API key is missing" in failed.stdout
    assert file_names(tmp_path) == []

    unreachable = await run(
        node, "examples/node/generate.mjs", "A bakery landing page",
        env={"S2C_AGENT_ADDR": f"127.0.0.1:{closed_port()}"},
    )  # fmt: skip
    assert unreachable.returncode == 2
    assert "UNAVAILABLE" in unreachable.stderr

    rejected = await run(
        node, "examples/node/generate.mjs", "--stack", "cobol", "A bakery landing page"
    )
    assert rejected.returncode == 2
    assert "unknown stack" in rejected.stderr


async def test_grpcurl_script_streams_events_until_generation_complete(
    processes: Processes,
) -> None:
    result = await run(
        str(GRPCURL_SCRIPT), "-n", "1", 'A "bakery"\tlanding page\nwith \\ fresh bread',
        env={"S2C_AGENT_ADDR": agent(processes), "GRPCURL": str(GRPCURL)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    messages = json_values(result.stdout)
    assert all(message["events"] for message in messages)
    events = [event for message in messages for event in message["events"]]
    assert [int(e["sequence"]) for e in events] == list(range(1, len(events) + 1))
    assert events[0]["variantCount"] == {"count": 1, "models": ["demo"]}
    # Generation-wide events name no variant; the first variant's say 0, not nothing.
    wide = ("variantCount", "generationError", "generationComplete")
    for event in events:
        assert ("variantIndex" in event) != any(kind in event for kind in wide), event
    assert {e["variantIndex"] for e in events if "variantIndex" in e} == {0}
    assert events[-1]["generationComplete"] == {"status": "RUN_STATUS_COMPLETED"}
    assert any("toolStart" in e for e in events)
    page = [e["codeSnapshot"]["content"] for e in events if "codeSnapshot" in e][-1]
    assert_complete_document(page)
    # The prompt (quotes, tab, newline, backslash) arrived intact as JSON.
    thinking = "".join(e["thinkingDelta"]["text"] for e in events if "thinkingDelta" in e)
    assert 'A "bakery" landing page with \\ fresh bread' in thinking


async def test_grpcurl_script_takes_the_address_as_an_argument_and_fails_clearly(
    processes: Processes,
) -> None:
    env = {"GRPCURL": str(GRPCURL), "S2C_AGENT_ADDR": f"127.0.0.1:{closed_port()}"}
    # -a wins over the environment.
    result = await run(str(GRPCURL_SCRIPT), "-a", agent(processes), "-n", "9", "A page", env=env)
    assert result.returncode == 2  # reached the agent, which rejected the variant count
    assert "variant_count: must be 0..8" in result.stderr
    unreachable = await run(str(GRPCURL_SCRIPT), "A page", env=env)
    assert unreachable.returncode == 2
    assert "grpcurl failed" in unreachable.stderr
    usage = await run(str(GRPCURL_SCRIPT), "-s", "cobol", "A page", env=env)
    assert usage.returncode == 2
    assert "unknown stack" in usage.stderr


async def test_both_examples_call_a_locked_down_suite_with_tls_and_the_token(
    node: str, tmp_path: Path
) -> None:
    lock = locked_down(tmp_path / "pki")
    async with running_processes(tmp_path / "data", lock.server_env) as suite:
        env = {**lock.client_env, "S2C_AGENT_ADDR": agent(suite), "GRPCURL": str(GRPCURL)}
        from_node = await run(
            node, "examples/node/generate.mjs", "--variants", "1", "--out", str(tmp_path / "out"),
            "A bakery landing page", env=env,
        )  # fmt: skip
        from_grpcurl = await run(str(GRPCURL_SCRIPT), "-n", "1", "A bakery landing page", env=env)
        no_token = {k: v for k, v in env.items() if k != "S2C_GRPC_TOKEN"}
        node_refused = await run(node, "examples/node/generate.mjs", "A page", env=no_token)
        grpcurl_refused = await run(str(GRPCURL_SCRIPT), "A page", env=no_token)
    assert from_node.returncode == 0, from_node.stderr
    assert "generation_complete RUN_STATUS_COMPLETED" in from_node.stdout
    assert_complete_document((tmp_path / "out" / "variant-1.html").read_text())
    assert from_grpcurl.returncode == 0, from_grpcurl.stderr
    events = json_values(from_grpcurl.stdout)[-1]["events"]
    assert events[-1]["generationComplete"] == {"status": "RUN_STATUS_COMPLETED"}
    assert node_refused.returncode == 2
    assert "UNAUTHENTICATED" in node_refused.stderr
    assert grpcurl_refused.returncode == 2
    assert "Unauthenticated" in grpcurl_refused.stderr
    for result in (from_node, from_grpcurl, node_refused, grpcurl_refused):
        assert GRPC_TOKEN not in result.stdout + result.stderr
