"""The writing tools on a built project (react_vite): each change is followed by a build.

The result tells the model how the build went, with the first errors as
`file:line:column: message` so its next call can fix them; a good build's page goes back
as the outcome's `built_file` (`dist/index.html`), which the agent keeps as the project's
entry page. A failed build changes no page: the previews keep the last good one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from services.common.react_project import BUILT_PATH
from services.common.tool_types import FileState
from services.tools.react_build import BuildResult, ReactBuilder
from services.tools.types import ToolContext, ToolHandler, ToolOutcome


def with_build(handler: ToolHandler, builder: ReactBuilder) -> ToolHandler:
    """`handler`, followed on a react_vite project by a build of the files it left."""

    async def build_after(
        args: dict[str, Any], file: FileState | None, ctx: ToolContext
    ) -> ToolOutcome:
        outcome = await handler(args, file, ctx)
        written = outcome.updated_file
        if ctx.build != "react_vite" or not outcome.ok or written is None:
            return outcome
        project = {f.path: f.content for f in ctx.files or ((file,) if file else ())}
        project[written.path] = written.content
        project.pop(BUILT_PATH, None)  # the last build's page is not a source
        built = await builder.build(project)
        return _with_result(outcome, built)

    return build_after


def build_report(built: BuildResult) -> dict[str, Any]:
    """How a build went, for the model and the UI alike."""
    if built.html is not None:
        return {"ok": True, "page": BUILT_PATH, "bytes": len(built.html.encode())}
    return {
        "ok": False,
        "errors": [str(e) for e in built.errors],
        "note": (
            "The preview keeps the last good build. Fix these errors, or write the files "
            "they name if you have not yet."
        ),
    }


def _with_result(outcome: ToolOutcome, built: BuildResult) -> ToolOutcome:
    report = build_report(built)
    page = FileState(BUILT_PATH, built.html) if built.html is not None else None
    return replace(
        outcome,
        result={**outcome.result, "build": report},
        summary={**outcome.summary, "build": report},
        built_file=page,
    )
