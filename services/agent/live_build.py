"""The live preview of a built project (react_vite): rebuilt while its files stream.

The tools build the project after each call, but a turn's calls run only once the turn
has streamed. Meanwhile each create_file's content is fed here as it streams, and the
project (the files written so far, the streaming ones as far as they came) is rebuilt by
a tool worker (`BuildProject`) once the stream has been quiet for `quiet_s`, or at least
every `max_wait_s` while it keeps coming; one build at a time, the latest state wins. A
page that builds and differs from the last one shown goes out as the project's page; a
file cut mid-statement does not build, and the last good page stays. When the turn's
stream ends (`settle`) a build still running is dropped: the tools' own builds follow.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from services.agent.domain import FileState
from services.agent.events import CodeSnapshot, Payload
from services.common.react_project import BUILT_PATH, ProjectBuild
from services.common.text import clean_text

log = logging.getLogger(__name__)

QUIET_S = 0.15
MAX_WAIT_S = 0.6
BUILD_TIMEOUT_S = 10.0  # the gRPC deadline; the worker stops a build sooner


@runtime_checkable
class ProjectBuilder(Protocol):
    async def build_project(
        self, files: Mapping[str, str], build: ProjectBuild, *, timeout_s: float, owner: str = ""
    ) -> str | None:
        """The page `files` build to, or None when they do not build."""
        ...


class LiveBuild:
    """One variant's live builds. `files()` is the project as its tools last left it;
    `show(page)` sends a page out."""

    def __init__(
        self,
        builder: ProjectBuilder,
        build: ProjectBuild,
        files: Callable[[], Mapping[str, str]],
        show: Callable[[str], None],
        *,
        owner: str = "",
        quiet_s: float = QUIET_S,
        max_wait_s: float = MAX_WAIT_S,
    ) -> None:
        self._builder = builder
        self._build = build
        self._files = files
        self._show = show
        self._owner = owner
        self._quiet_s = quiet_s
        self._max_wait_s = max_wait_s
        self._streaming: dict[str, list[str]] = {}
        self._last_change = 0.0
        self._first_change: float | None = None  # of the changes no build has seen yet
        self._task: asyncio.Task[None] | None = None
        self._shown = ""
        self.builds = 0  # builds asked for, for tests and metrics

    def delta(self, path: str, offset: int, text: str) -> None:
        """`text` streamed into `path` at `offset` (0: the file starts over)."""
        parts = self._streaming.setdefault(path, [])
        if offset == 0:
            parts.clear()
        parts.append(text)
        now = time.monotonic()
        self._last_change = now
        if self._first_change is None:
            self._first_change = now
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run())

    async def settle(self) -> None:
        """The turn's stream ended: no live build lands after this."""
        self._streaming.clear()
        self._first_change = None
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise

    async def _run(self) -> None:
        while self._first_change is not None:
            now = time.monotonic()
            due = min(self._last_change + self._quiet_s, self._first_change + self._max_wait_s)
            if due > now:
                await asyncio.sleep(due - now)
                continue
            self._first_change = None
            project = dict(self._files())
            project.update({path: "".join(parts) for path, parts in self._streaming.items()})
            project.pop(BUILT_PATH, None)
            self.builds += 1
            try:
                page = await self._builder.build_project(
                    project, self._build, timeout_s=BUILD_TIMEOUT_S, owner=self._owner
                )
            except Exception:  # a live preview is best effort; the tools build again
                log.warning("live build failed", exc_info=True)
                continue
            if page is not None and page != self._shown:
                self._shown = page
                self._show(page)


def for_variant(
    tools: object,
    build: ProjectBuild,
    files: dict[str, FileState],
    emit: Callable[[str, Payload], None],
    owner: str = "",
) -> LiveBuild | None:
    """A variant's live builds over its `files` (which each page shown joins), or None
    when its project is not built or `tools` cannot build."""
    if build == "none" or not isinstance(tools, ProjectBuilder):
        return None

    def show(page: str) -> None:
        files[BUILT_PATH] = FileState(BUILT_PATH, page)
        emit("", CodeSnapshot(BUILT_PATH, clean_text(page)))

    def sources() -> dict[str, str]:
        return {path: file.content for path, file in files.items()}

    return LiveBuild(tools, build, sources, show, owner=owner)
