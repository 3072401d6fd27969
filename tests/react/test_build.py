"""The react_vite build with the real vendored esbuild and Tailwind (docs/react.md)."""

from __future__ import annotations

import asyncio
import re
import signal
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
import pytest_asyncio

from services.tools.file_tools import create_file, edit_file
from services.tools.project_build import with_build
from services.tools.react_build import BuildSettings, ReactBuilder
from services.tools.types import FileState, ToolContext
from tests.react.app import project

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def builder() -> AsyncIterator[ReactBuilder]:
    """One builder for the module: its build processes are reused from build to build."""
    shared = ReactBuilder(BuildSettings())
    yield shared
    await shared.close()


async def test_the_project_builds_to_one_self_contained_page(builder: ReactBuilder) -> None:
    built = await builder.build(project())
    assert built.errors == ()
    html = built.html
    assert html is not None
    # Inlined: no script or stylesheet is loaded from anywhere, not even the project.
    assert not re.search(r"<script[^>]*\bsrc=|<link[^>]*stylesheet", html)
    assert "/src/main.tsx" not in html
    assert "<title>Acme pricing</title>" in html
    # Tailwind compiled what the sources use, and only that.
    for rule in (".bg-slate-900{", ".grid-cols-3{", ".text-indigo-600{", ".border-indigo-600{"):
        assert rule in html, rule
    assert ".bg-red-500{" not in html
    # React's production build and the icon's path are in the bundle.
    assert "react-dom.production.min.js" in html
    assert "lucide-react" in html


async def test_an_unknown_import_is_an_error_naming_it_with_file_and_line(
    builder: ReactBuilder,
) -> None:
    files = project()
    files["src/components/Footer.tsx"] = (
        'import { motion } from "framer-motion";\n\n'
        "export const Footer = () => <motion.footer>Hi</motion.footer>;\n"
    )
    built = await builder.build(files)
    assert built.html is None
    [error] = built.errors
    assert (error.file, error.line) == ("src/components/Footer.tsx", 1)
    assert '"framer-motion" is not available' in error.text
    assert str(error).startswith("src/components/Footer.tsx:1:")


async def test_a_syntax_error_and_a_missing_file_come_back_where_they_are(
    builder: ReactBuilder,
) -> None:
    files = project()
    pricing = files["src/components/Pricing.tsx"]
    closing = pricing.splitlines().index("    </section>") + 1
    files["src/components/Pricing.tsx"] = pricing.replace("</section>", "</div>")
    del files["src/components/Footer.tsx"]
    built = await builder.build(files)
    assert built.html is None
    where = {(e.file, e.line) for e in built.errors}
    assert ("src/components/Pricing.tsx", closing) in where, built.errors
    assert any("cannot find" in e.text and "Footer" in e.text for e in built.errors)


async def test_a_build_past_its_time_is_stopped_with_the_reason() -> None:
    slow = ReactBuilder(replace(BuildSettings(), timeout_s=0.001))
    built = await slow.build(project())
    assert built.html is None
    assert "longer than 0.001 s" in built.errors[0].text


async def test_a_cancelled_build_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    started: asyncio.Future[asyncio.subprocess.Process] = asyncio.Future()
    spawn = asyncio.create_subprocess_exec

    async def spawned(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        process = await spawn(*args, **kwargs)
        started.set_result(process)
        return process

    monkeypatch.setattr(asyncio, "create_subprocess_exec", spawned)
    fresh = ReactBuilder(BuildSettings())  # no idle process: the build starts one
    task = asyncio.create_task(fresh.build(project()))
    process = await started
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # Killed, not left to finish: the whole group got SIGKILL.
    assert await process.wait() == -signal.SIGKILL


async def test_the_file_tools_report_the_build_and_return_its_page(builder: ReactBuilder) -> None:
    create = with_build(create_file, builder)
    edit = with_build(edit_file, builder)
    files = project()
    app = files.pop("src/App.tsx")
    ctx = ToolContext(files=tuple(FileState(p, c) for p, c in files.items()), build="react_vite")
    broken = app.replace("<Header />", "<Header>")
    outcome = await create({"path": "src/App.tsx", "content": broken}, None, ctx)
    assert outcome.ok
    assert outcome.built_file is None
    report = outcome.result["build"]
    assert report["ok"] is False
    assert report["errors"][0].startswith("src/App.tsx:"), report
    assert "last good build" in report["note"]
    ctx = replace(ctx, files=(*ctx.files, FileState("src/App.tsx", broken)))
    fix = {"path": "src/App.tsx", "old_text": "<Header>", "new_text": "<Header />"}
    outcome = await edit(fix, None, ctx)
    assert outcome.result["build"]["ok"] is True
    assert outcome.built_file is not None
    assert outcome.built_file.path == "dist/index.html"
    assert outcome.result["build"]["bytes"] == len(outcome.built_file.content.encode())
    # Without the build, on another stack, the same tools do not build.
    plain = await create({"path": "x.html", "content": "<p>x</p>"}, None, ToolContext())
    assert "build" not in plain.result
    assert plain.built_file is None


async def test_the_build_output_is_not_a_path_the_model_may_write() -> None:
    ctx = ToolContext(build="react_vite")
    outcome = await create_file({"path": "dist/index.html", "content": "<p>x</p>"}, None, ctx)
    assert not outcome.ok
    assert "dist/ holds the build's output" in outcome.result["error"]
    outcome = await create_file({"path": "src/App.tsx", "content": "x"}, None, ToolContext())
    assert "it must end in .html, .htm, .css or .js" in outcome.result["error"]
