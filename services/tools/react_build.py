"""Builds a react_vite project into one self-contained page, offline (docs/react.md).

A build process (`node build.mjs`) has esbuild bundle the TypeScript with React and the
importable packages from the vendored `node_modules`, and the Tailwind compiler (v3, the
npm package) compile the project's CSS against its sources; this module then inlines both
into the project's `index.html` in place of its `<script type="module" src>`. A project
whose entry is not there yet (the model writes it file by file) is answered here, with no
process.

Build processes are kept between builds (starting node and loading Tailwind costs more
than a build), at most `processes` of them, each serving one build at a time and
replaced after `builds_per_process` builds (Tailwind keeps a context per config it has
seen). Every build stays bounded and killable: each process runs in a session of its own
with its V8 heap capped, and a build past its time or cancelled kills its process's
whole group (node and esbuild's own binary beside it); the next build starts a fresh
one. Nothing of the project touches the disk and no project file is executed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.common.markup import (
    RawText,
    attribute_values,
    attributes,
    escaped_body,
    scan_markup,
)
from services.common.react_project import IMPORTABLE
from services.common.vendor import DEFAULT_VENDOR_DIR

SCRIPT = Path(__file__).resolve().parent / "react" / "build.mjs"
MAX_ERRORS = 5
# What a build may print: a page is a few hundred KB; past this something is wrong.
_MAX_OUTPUT_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class BuildError:
    """One error of a build, where it is: `file` relative to the project, 1-based line,
    0-based column (esbuild's); line 0 when it is about the project as a whole."""

    file: str
    line: int
    column: int
    text: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}" if self.line else self.file
        return f"{where}: {self.text}" if where else self.text


@dataclass(frozen=True, slots=True)
class BuildResult:
    html: str | None  # the page; None when the build failed
    errors: tuple[BuildError, ...] = ()
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class BuildSettings:
    node: str = "node"  # S2C_NODE
    node_modules: Path = DEFAULT_VENDOR_DIR / "node_modules"
    # S2C_REACT_BUILD_TIMEOUT_S: under the writing tools' own 10 s, so that the model
    # reads the build's reason rather than a tool timeout.
    timeout_s: float = 8.0
    max_heap_mb: int = 512  # S2C_REACT_BUILD_HEAP_MB: each process's old space
    processes: int = 2  # S2C_REACT_BUILD_PROCESSES: builds at once
    builds_per_process: int = 100


class _Process:
    """One build process; `ask` sends a request line and reads the answer line."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.builds = 0

    async def ask(self, payload: bytes) -> bytes:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None
        assert stdout is not None
        stdin.write(payload + b"\n")
        await stdin.drain()
        return await stdout.readline()

    def kill(self) -> None:
        # esbuild's service binary is node's child: the group takes both.
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)


class ReactBuilder:
    """Runs builds with one frozen set of settings; safe to share between calls."""

    def __init__(self, settings: BuildSettings) -> None:
        self.settings = settings
        self._slots = asyncio.Semaphore(settings.processes)
        self._idle: list[_Process] = []

    async def build(self, files: Mapping[str, str]) -> BuildResult:
        """Builds `files` (path → content). Raises nothing for a broken project (its
        errors are the result); cancellation kills the build and propagates."""
        started = time.monotonic()
        shell = files.get("index.html")
        entry = entry_of(shell) if shell is not None else None
        if shell is None or entry is None or entry.path not in files:
            return _failed(_no_entry(shell, entry), started, "index.html")
        request = {"files": dict(files), "allowed": list(IMPORTABLE), "entry": entry.path}
        bundle = await self._bundle(json.dumps(request).encode(), started)
        if isinstance(bundle, BuildResult):
            return bundle
        js, css = bundle
        page = _inline(shell[: entry.start] + shell[entry.end :], js, css)
        return BuildResult(page, (), time.monotonic() - started)

    async def close(self) -> None:
        """Ends the idle build processes (a running build ends with its caller)."""
        idle, self._idle = self._idle, []
        for process in idle:
            process.kill()
            await process.process.wait()

    async def _bundle(self, payload: bytes, started: float) -> tuple[str, str] | BuildResult:
        s = self.settings
        async with self._slots:
            try:
                process = self._idle.pop() if self._idle else await self._start()
            except OSError as exc:
                return _failed(f"cannot run {s.node} to build the project: {exc}", started)
            try:
                async with asyncio.timeout(s.timeout_s):
                    out = await process.ask(payload)
            except TimeoutError:
                process.kill()
                text = f"the build took longer than {s.timeout_s:g} s and was stopped"
                return _failed(text, started)
            except BaseException:
                process.kill()  # mid-request: its state is unknown
                raise
            process.builds += 1
            if out and process.builds < s.builds_per_process:
                self._idle.append(process)
            else:
                process.kill()
            return _parse(out, started)

    async def _start(self) -> _Process:
        s = self.settings
        process = await asyncio.create_subprocess_exec(
            s.node,
            f"--max-old-space-size={s.max_heap_mb}",
            str(SCRIPT),
            str(s.node_modules),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
            cwd=str(s.node_modules),
            limit=_MAX_OUTPUT_BYTES,
        )
        return _Process(process)


def _parse(out: bytes, started: float) -> tuple[str, str] | BuildResult:
    try:
        answer = json.loads(out)
    except ValueError:
        # No answer: node ran out of heap or was killed.
        return _failed("the build process ended without an answer (out of memory?)", started)
    if answer.get("ok"):
        return str(answer["js"]), str(answer["css"])
    errors = tuple(
        BuildError(str(e["file"]), int(e["line"]), int(e["column"]), str(e["text"]))
        for e in answer.get("errors", [])[:MAX_ERRORS]
    )
    seconds = time.monotonic() - started
    return BuildResult(None, errors or (BuildError("", 0, 0, "the build failed"),), seconds)


def _failed(text: str, started: float, file: str = "") -> BuildResult:
    return BuildResult(None, (BuildError(file, 0, 0, text),), time.monotonic() - started)


@dataclass(frozen=True, slots=True)
class Entry:
    """index.html's `<script type="module" src>` element (its span) and what it loads."""

    start: int
    end: int
    path: str  # relative to the project: `/src/main.tsx` and `./src/main.tsx` are src/main.tsx


def entry_of(html: str) -> Entry | None:
    """The first module script with a `src` of `html`, as Vite takes its entry."""
    for token in scan_markup(html):
        if not isinstance(token, RawText) or token.name.lower() != "script":
            continue
        values = attribute_values(attributes(html, token))
        src = values.get("src", "").strip()
        if values.get("type", "").strip().lower() == "module" and src:
            close = html.find(">", token.end)
            end = len(html) if close < 0 else close + 1
            return Entry(token.start, end, src.removeprefix(".").lstrip("/"))
    return None


def _no_entry(shell: str | None, entry: Entry | None) -> str:
    if shell is None:
        return "the project has no index.html yet"
    if entry is None:
        return 'index.html has no <script type="module" src="/src/main.tsx"></script>'
    return f"index.html loads {entry.path}, which the project does not have yet"


def _inline(shell: str, js: str, css: str) -> str:
    """`shell` with the stylesheet at the end of its head and the script at the end of its
    body (where Vite's built page has them), each escaped so it cannot close its element."""
    style = f"<style>{escaped_body(css, 'style')}</style>"
    script = f'<script type="module">{escaped_body(js, "script")}</script>'
    lower = shell.lower()
    head = lower.find("</head>")
    shell = shell[:head] + style + shell[head:] if head >= 0 else style + shell
    lower = shell.lower()
    body = lower.rfind("</body>")
    return shell[:body] + script + shell[body:] if body >= 0 else shell + script
