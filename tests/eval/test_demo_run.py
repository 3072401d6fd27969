"""`s2c eval` as a process against the real suite (demo model) over part of the shipped set.

The run is interrupted with SIGINT after its first item, then resumed to the end; the
report it leaves is opened in Chromium. Four of the shipped items (each kind of viewport
and the PNG-only one) exercise every path of the run; `tests/eval/test_scores.py` scores
every shipped page, so the whole set here would only repeat it at ~5 s an item.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import async_playwright

from services.eval.render import chromium_path
from services.eval.sets import BUILTIN_SETS
from tests.processes import Processes, base_env, running_processes

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(600)]
ROOT = Path(__file__).resolve().parents[2]
PICKED = ("landing", "mobile-profile", "not-found", "poster")
ITEMS = len(PICKED)


def part_of_basic(root: Path) -> Path:
    """A set directory holding PICKED from the shipped `basic` set, in that order."""
    manifest = json.loads((BUILTIN_SETS / "basic" / "manifest.json").read_text("utf-8"))
    items = {item["id"]: item for item in manifest["items"]}
    root.mkdir()
    for name in PICKED:
        source = BUILTIN_SETS / "basic" / items[name]["file"]
        (root / source.name).write_bytes(source.read_bytes())
    picked = {**manifest, "name": "basic-part", "items": [items[n] for n in PICKED]}
    (root / "manifest.json").write_text(json.dumps(picked), "utf-8")
    return root


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


@dataclass
class DemoEval:
    out: Path
    interrupted: Run
    partial: dict[str, Any]  # results.json right after the interruption
    resumed: Run
    final: dict[str, Any]


async def start_eval(
    reference_set: Path, out: Path, agent: int, data_dir: Path
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "services.cli", "eval", str(reference_set), "--model", "demo"),
        *("--out", str(out), "--agent", f"127.0.0.1:{agent}"),
        cwd=ROOT,
        env=base_env(data_dir),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finish(process: asyncio.subprocess.Process, first: bytes = b"") -> Run:
    stdout, stderr = await process.communicate()
    return Run(process.returncode or 0, stdout.decode(), (first + stderr).decode())


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def suite_without_screenshots(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Processes]:
    """The real suite, but the tool worker takes no screenshots: the demo model's
    screenshot calls (Chromium in the worker, more than half of this module's time)
    are not what an eval run is about and have tests of their own; the run still
    renders and scores every page in its own Chromium."""
    env = {"S2C_SCREENSHOTS": "0"}
    async with running_processes(tmp_path_factory.mktemp("suite"), env) as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def demo_eval(
    suite_without_screenshots: Processes, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DemoEval]:
    agent = suite_without_screenshots.agent.port
    out = tmp_path_factory.mktemp("eval") / "out"
    data = tmp_path_factory.mktemp("eval-data")
    reference_set = part_of_basic(tmp_path_factory.mktemp("sets") / "basic-part")
    process = await start_eval(reference_set, out, agent, data)
    assert process.stderr is not None
    # Not a terminal: one line per finished item on stderr. Interrupt after the first.
    first = await process.stderr.readline()
    assert b": ok" in first, first
    process.send_signal(signal.SIGINT)
    interrupted = await finish(process, first)
    partial = json.loads((out / "results.json").read_text(encoding="utf-8"))
    resumed = await finish(await start_eval(reference_set, out, agent, data))
    final = json.loads((out / "results.json").read_text(encoding="utf-8"))
    yield DemoEval(out, interrupted, partial, resumed, final)


async def test_ctrl_c_leaves_a_valid_partial_report(demo_eval: DemoEval) -> None:
    assert demo_eval.interrupted.code == 128 + signal.SIGINT, demo_eval.interrupted.stderr
    assert "partial report" in demo_eval.interrupted.stderr
    done = [i for i, by_model in demo_eval.partial["results"].items() if "demo" in by_model]
    assert 1 <= len(done) < ITEMS
    assert (demo_eval.out / "report.html").is_file()


async def test_the_resumed_run_completes_without_redoing_finished_items(
    demo_eval: DemoEval,
) -> None:
    assert demo_eval.resumed.code == 0, demo_eval.resumed.stderr
    final = demo_eval.final["results"]
    assert len(final) == ITEMS
    assert all(by_model["demo"]["status"] == "ok" for by_model in final.values())
    for item, by_model in demo_eval.partial["results"].items():
        before = by_model["demo"]["generation_id"]
        assert final[item]["demo"]["generation_id"] == before, f"{item} was redone"
    resumed_lines = [ln for ln in demo_eval.resumed.stderr.splitlines() if ": ok" in ln]
    assert len(resumed_lines) == ITEMS - len(demo_eval.partial["results"])
    # The summary table goes to stdout.
    assert "demo" in demo_eval.resumed.stdout
    assert f"{ITEMS}/{ITEMS}" in demo_eval.resumed.stdout
    poster = final["poster"]["demo"]["scores"]
    # A PNG reference is read by OCR: all five metrics apply to it too.
    assert all(0 <= poster[m] <= 1 for m in ("block_match", "text", "position", "color", "visual"))
    for by_model in final.values():
        for value in by_model["demo"]["scores"].values():
            assert value is None or 0 <= value <= 1
        # Every generated page was checked by axe-core in its render.
        assert 0 <= by_model["demo"]["scores"]["accessibility"] <= 1


async def test_the_report_opens_in_chromium(demo_eval: DemoEval) -> None:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium_path())
        try:
            page = await browser.new_page()
            await page.goto((demo_eval.out / "report.html").as_uri())
            header = await page.locator("#summary thead th").all_inner_texts()
            assert header[:7] == [
                "model",
                "items",
                "block-match",
                "text",
                "position",
                "color",
                "visual",
            ]
            row = await page.locator("#summary tbody tr").first.locator("td").all_inner_texts()
            assert row[0] == "demo"
            assert row[1] == f"{ITEMS}/{ITEMS}"
            assert all(0 <= float(v) <= 1 for v in row[2:7])
            item = page.locator('[data-item="landing"]')
            images = item.locator("img")
            assert await images.count() == 2  # the reference and the demo model's render
            for i in range(2):
                image = images.nth(i)
                await image.scroll_into_view_if_needed()
                loaded = await image.evaluate("img => img.decode().then(() => img.naturalWidth)")
                assert loaded > 0
            poster = page.locator('[data-item="poster"]')
            assert "read by OCR" in await poster.inner_text()
            # Its OCR blocks are drawn over the reference, each naming its text on hover.
            blocks = poster.locator(".ocr-block")
            assert await blocks.count() > 0
            assert await blocks.first.get_attribute("title")
        finally:
            await browser.close()


async def run_cli(*args: str, data_dir: Path) -> Run:
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "services.cli", "eval", *args),
        cwd=ROOT,
        env=base_env(data_dir),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    return await finish(process)


async def test_bad_usage_and_an_unreachable_agent_exit_2_saying_why(tmp_path: Path) -> None:
    no_set = await run_cli(
        "no-such-set", "--model", "demo", "--out", str(tmp_path / "a"), data_dir=tmp_path
    )
    assert no_set.code == 2
    assert "no-such-set: no such set directory (built-in sets: basic)" in no_set.stderr
    # Port 1 on loopback: nothing listens there.
    unreachable = await run_cli(
        "basic",
        "--model",
        "demo",
        "--out",
        str(tmp_path / "b"),
        "--agent",
        "127.0.0.1:1",
        data_dir=tmp_path,
    )
    assert unreachable.code == 2
    assert "cannot reach the agent at 127.0.0.1:1" in unreachable.stderr
    assert (tmp_path / "b" / "report.html").is_file()  # an empty but valid report


async def test_a_baseline_is_saved_and_a_drop_past_the_tolerance_fails_the_gate(
    demo_eval: DemoEval, suite_without_screenshots: Processes, tmp_path: Path
) -> None:
    # A baseline 0.05 above the finished run on one metric, 0.01 on another: only the first
    # drops by more than the default tolerance (0.02).
    scores = {i: {"demo": r["demo"]["scores"]} for i, r in demo_eval.final["results"].items()}
    landing = scores["landing"]["demo"]
    text, visual = landing["text"], landing["visual"]
    higher = json.loads(json.dumps(scores))
    higher["landing"]["demo"].update(text=text + 0.05, visual=visual + 0.01)
    (tmp_path / "higher.json").write_text(json.dumps({"version": 1, "scores": higher}), "utf-8")
    # The finished run again (nothing is redone): held to that baseline, and saving its own.
    gated = await run_cli(
        *(str(part_of_basic(tmp_path / "basic-part")), "--model", "demo"),
        *("--out", str(demo_eval.out)),
        *("--agent", f"127.0.0.1:{suite_without_screenshots.agent.port}"),
        *("--gate", str(tmp_path / "higher.json")),
        *("--save-baseline", str(tmp_path / "baseline.json")),
        data_dir=tmp_path,
    )
    assert gated.code == 1, gated.stderr
    dropped = [ln for ln in gated.stderr.splitlines() if "regression:" in ln]
    assert dropped == [
        f"s2c: regression: landing · demo · text: {text + 0.05:.3f} → {text:.3f} (-0.050)"
    ]
    saved = json.loads((tmp_path / "baseline.json").read_text("utf-8"))["scores"]
    # The saved baseline is the run's scores (the metrics not computed left out).
    assert saved == {
        i: {"demo": {m: v for m, v in r["demo"].items() if v is not None}}
        for i, r in scores.items()
    }
