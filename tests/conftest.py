"""Shared fixtures and the test tiers.

Tiers: every test is marked by where it lives, so a new file in a slow directory is in
its tier without anyone remembering to mark it. `make test-fast` deselects the slow
tiers; `make test` (and CI) runs everything.

- `e2e`: real service processes or whole suites end to end (`tests/e2e`, `tests/clients`,
  `tests/mcp/test_clients.py`).
- `browser`: a real Chromium (`tests/browser`, the screenshot tool's tests).
- `fuzz`: the hostile-input campaigns (`tests/e2e/test_fuzz.py`) and the property test
  that checks the tool validators against a reference.
- `scale`: many generations against killed workers (`tests/e2e/test_scale.py`).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

# Before any test module imports grpc (services/__init__.py says why).
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

# Imported where used: a conftest that imports the services would turn one broken
# service module into a collection error for every test, pure unit tests included.
if TYPE_CHECKING:
    from tests.fakes.anthropic_server import FakeAnthropic
    from tests.fakes.gemini_server import FakeGemini
    from tests.fakes.openai_server import FakeOpenAI
    from tests.processes import Processes
    from tests.suite import Suite

TESTS = Path(__file__).resolve().parent
# Directories, files, and single tests (`file::name`) of each slow tier; a file inherits
# its directory's tiers. Outside the slow directories, the entries are what
# `pytest --durations=30` showed taking seconds each.
TIERS: dict[str, tuple[str, ...]] = {
    "e2e": ("e2e",),
    "clients": ("e2e",),
    "mcp/test_clients.py": ("e2e",),
    "browser": ("browser",),
    "e2e/test_fuzz.py": ("fuzz",),
    "e2e/test_scale.py": ("scale",),
    "tools/test_screenshot.py": ("browser",),
    "tools/test_capture.py": ("browser",),
    "eval/test_scores.py": ("browser",),
    "eval/test_png_scores.py": ("browser",),
    "eval/test_demo_run.py": ("e2e", "browser"),
    "tools/test_validation.py::test_verdicts_match_a_reference_validator": ("fuzz",),
}


def tiers(item: pytest.Item) -> set[str]:
    try:
        relative = item.path.resolve().relative_to(TESTS)
    except ValueError:
        return set()
    keys = [*relative.parts[:-1], relative.as_posix()]
    keys.append(f"{relative.as_posix()}::{getattr(item, 'originalname', item.name)}")
    return {tier for key in keys for tier in TIERS.get(key, ())}


# Files of these tiers run first, the longest first (each file keeps its own order). With
# `-n 2 --dist loadfile` a worker takes whole files in this order as it frees up; the
# long files last would leave one worker running them while the other sits idle.
FIRST = ("fuzz", "scale", "e2e", "browser")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank: dict[Path, int] = {}
    for item in items:
        found = tiers(item)
        for tier in sorted(found):
            item.add_marker(tier)
        first = min((FIRST.index(t) for t in found if t in FIRST), default=len(FIRST))
        rank[item.path] = min(rank.get(item.path, first), first)
    items.sort(key=lambda item: rank[item.path])  # stable: files stay whole and in order


@pytest_asyncio.fixture
async def suite(tmp_path: Path) -> AsyncIterator[Suite]:
    """Tools, agent and gateway in this process with the default settings (demo model)."""
    from tests.suite import running_suite

    async with running_suite(tmp_path) as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def processes(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Processes]:
    """The three real service processes (demo model), shared by a module's tests.

    Module-scoped: its tests must run on the module's event loop
    (`pytest.mark.asyncio(loop_scope="module")`).
    """
    from tests.processes import running_processes

    async with running_processes(tmp_path_factory.mktemp("suite")) as running:
        yield running


@pytest_asyncio.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAI]:
    """A fake OpenAI server (Responses and Chat Completions) at `fake_openai.base_url`."""
    from tests.fakes.openai_server import FakeOpenAI

    async with FakeOpenAI() as fake:
        yield fake


@pytest_asyncio.fixture
async def fake_anthropic() -> AsyncIterator[FakeAnthropic]:
    """A fake Anthropic Messages server at `fake_anthropic.base_url`; stop() is idempotent."""
    from tests.fakes.anthropic_server import FakeAnthropic

    fake = FakeAnthropic()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


@pytest_asyncio.fixture
async def fake_gemini() -> AsyncIterator[FakeGemini]:
    """A fake Gemini server at `fake_gemini.base_url`."""
    from tests.fakes.gemini_server import FakeGemini

    fake = FakeGemini()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()
