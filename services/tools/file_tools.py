"""The file tools: `create_file`, `edit_file` and `retrieve_option`.

Arguments come from a protobuf Struct, so every number is a float (2.0) and OpenAI's
strict schemas send null for each optional field it leaves out: null always means
"absent" here, and numbers are coerced to ints before they reach a result.

The app is a project of files, usually one HTML document: a `path` given to create_file or
edit_file must be a relative name ending in .html, .htm, .css or .js (on a react_vite
project also .ts, .tsx, .jsx and .json: `project_paths.path_problem`); a path outside the
project is a tool error for the model.
create_file writes the file it names (the current one without a path); edit_file changes
the file it names among the project's (`ToolContext.files`), else the current one. Only
the model's argument is judged; the current file's path is the agent's own. A file's UTF-8
size is capped (`max_file_bytes`) for create_file and, at every step, for edit_file: a
replace-all can multiply a file's size, so the size is checked before the replacement is
built. All files together, their paths included, are capped too
(`ToolContext.max_project_bytes`, services/common/project_limits.py), after the call.
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from services.common.html import extract_html_content
from services.common.project_limits import file_bytes, project_bytes, utf8_size
from services.common.project_paths import ProjectPaths, is_html
from services.common.project_paths import path_problem as path_problem
from services.common.tool_summaries import summarize_text
from services.common.tool_types import FileState
from services.tools.project_build import with_build
from services.tools.react_build import ReactBuilder
from services.tools.settings import DEFAULT_MAX_FILE_BYTES
from services.tools.types import ToolContext, ToolHandler, ToolOutcome, failure

DEFAULT_PATH = "index.html"
PATH_RULE = "create_file path must be a relative file name like index.html"
_SHOWN_PATH_CHARS = 80
CREATE_PREVIEW_CHARS = 320
EDIT_SUMMARY_CHARS = 140
NOT_FOUND_SUMMARY_CHARS = 160
OPTION_PREVIEW_CHARS = 200
# Past this size, diffing can take long enough to stall every other call on the loop.
_THREAD_THRESHOLD = 100_000
_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


class _NotAnInt(ValueError):
    pass


def _as_int(value: Any) -> int | None:
    """`int(value)` for JSON-ish input: None stays None; anything unusable raises."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise _NotAnInt(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotAnInt(value)
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise _NotAnInt(value) from None
    raise _NotAnInt(value)


def _lenient_int(value: Any) -> int | None:
    try:
        return _as_int(value)
    except _NotAnInt:
        return None


def _nonempty_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# -- limits --------------------------------------------------------------------------------


def _bad_path(value: Any, problem: str) -> ToolOutcome:
    shown = json.dumps(value, ensure_ascii=True)
    if len(shown) > _SHOWN_PATH_CHARS:
        shown = shown[: _SHOWN_PATH_CHARS - 3] + "..."
    return failure(f"{PATH_RULE}; got {shown} ({problem})", "Invalid path")


def file_too_large(size: int, limit: int) -> ToolOutcome:
    return failure(
        f"File too large: {size} bytes; the limit is {_human_bytes(limit)}.",
        "File too large",
        size_bytes=size,
        limit_bytes=limit,
    )


def project_too_large(
    path: str, content: str, ctx: ToolContext, current: FileState | None
) -> ToolOutcome | None:
    """The refusal when `path` holding `content` takes the project over its limit."""
    limit = ctx.max_project_bytes
    if limit <= 0:
        return None
    # A project of one file comes as `current` alone (`ctx.files` is then empty).
    project = ctx.files or ((current,) if current is not None else ())
    others = project_bytes(f for f in project if f.path != path)
    size = file_bytes(FileState(path, content)) + others
    if size <= limit:
        return None
    return failure(
        f"Project too large: its files would hold {size} bytes together, paths included; "
        f"the limit is {_human_bytes(limit)}.",
        "Project too large",
        size_bytes=size,
        limit_bytes=limit,
    )


def _human_bytes(n: int) -> str:
    for unit, scale in (("MB", 1024 * 1024), ("KB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


# -- create_file ---------------------------------------------------------------------------


async def create_file(
    args: dict[str, Any],
    file: FileState | None,
    ctx: ToolContext,
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> ToolOutcome:
    raw = args.get("content")
    if not isinstance(raw, str) or not raw:
        return failure("create_file requires non-empty content", "Missing content")
    asked = args.get("path")
    if asked is not None and not isinstance(asked, str):
        return _bad_path(asked, "it must be a string")
    if asked:
        # A project of one file comes as `file` alone (`ctx.files` is then empty).
        project = ProjectPaths((f.path for f in ctx.files or ((file,) if file else ())), ctx.build)
        problem = project.problem(asked)
        if problem is not None:
            return _bad_path(asked, problem)
    path = asked or (file.path if file else "") or DEFAULT_PATH
    # Only a page is unwrapped from a fenced or chatty reply: a stylesheet is taken as is.
    content = (extract_html_content(raw) or raw) if is_html(path) else raw
    size = utf8_size(content)
    if size > max_file_bytes:
        return file_too_large(size, max_file_bytes)
    too_large = project_too_large(path, content, ctx, file)
    if too_large is not None:
        return too_large
    return ToolOutcome(
        ok=True,
        result={
            "content": f"Successfully created file at {path}.",
            "details": {"path": path, "contentLength": len(content)},
        },
        summary={
            "path": path,
            "contentLength": len(content),
            "preview": summarize_text(content, CREATE_PREVIEW_CHARS),
        },
        updated_file=FileState(path, content),
    )


# -- edit_file -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Edit:
    old_text: str
    new_text: str
    count: int | None


class _EditRejected(Exception):
    def __init__(self, outcome: ToolOutcome) -> None:
        super().__init__(outcome.summary.get("error", ""))
        self.outcome = outcome


def _parse_edit(item: Any) -> _Edit:
    edit: dict[str, Any] = item if isinstance(item, dict) else {}
    old_text = _nonempty_str(edit.get("old_text"))
    if old_text is None:
        raise _EditRejected(failure("edit_file requires old_text", "Missing old_text"))
    new_text = edit.get("new_text")
    if new_text is not None and not isinstance(new_text, str):
        new_text = str(new_text)
    try:
        count = _as_int(edit.get("count"))
    except _NotAnInt:
        raise _EditRejected(failure("count must be an integer", "Invalid count")) from None
    return _Edit(old_text, new_text or "", count)


def _apply(content: str, edit: _Edit, max_file_bytes: int) -> tuple[str, int]:
    occurrences = content.count(edit.old_text)
    if edit.count is None:
        wanted = 1
    elif edit.count < 0:
        wanted = occurrences
    else:
        wanted = edit.count
    replaced = min(wanted, occurrences)
    if replaced == 0:
        # count=0 lands here too: nothing was replaced, which upstream reports as not found.
        raise _EditRejected(
            ToolOutcome(
                False,
                {"error": "old_text not found", "old_text": edit.old_text},
                {
                    "error": "old_text not found",
                    "old_text": summarize_text(edit.old_text, NOT_FOUND_SUMMARY_CHARS),
                },
            )
        )
    grows_by = utf8_size(edit.new_text) - utf8_size(edit.old_text)
    if grows_by > 0:
        # Exact: the replaced occurrences do not overlap, and UTF-8 encodes by code point.
        size = utf8_size(content) + replaced * grows_by
        if size > max_file_bytes:
            raise _EditRejected(file_too_large(size, max_file_bytes))
    return content.replace(edit.old_text, edit.new_text, replaced), replaced


def unified_diff(old: str, new: str, path: str) -> tuple[str, int | None]:
    """The unified diff of two versions and the new-file line where the first hunk starts."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=path, tofile=path
    )
    # A last line without "\n" would otherwise run into the next diff line.
    diff = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    first_changed = None
    for line in diff.splitlines():
        match = _HUNK_HEADER.match(line)
        if match is not None:
            first_changed = int(match.group(1))
            break
    return diff, first_changed


def _target(
    args: dict[str, Any], file: FileState | None, ctx: ToolContext
) -> FileState | ToolOutcome:
    """The file an edit_file call changes: the one its `path` names, else the current one."""
    asked = args.get("path")
    # A one-file project (no `files`) edits its file whatever path is named, as upstream.
    if not ctx.files or asked is None or asked == "" or (file and asked == file.path):
        if file is None or not file.content:
            return failure("No file exists yet. Call create_file first.", "No file to edit")
        return file
    if not isinstance(asked, str):
        return _bad_path(asked, "it must be a string")
    problem = path_problem(asked, ctx.build)
    if problem is not None:
        return _bad_path(asked, problem)
    for candidate in ctx.files:
        if candidate.path == asked:
            return candidate
    known = ", ".join(f.path for f in ctx.files) or (file.path if file else "none")
    return failure(
        f"No file at {asked}; the project's files: {known}. Call create_file to add it.",
        "No such file",
    )


def _edit_file(
    args: dict[str, Any], current: FileState | None, ctx: ToolContext, max_file_bytes: int
) -> ToolOutcome:
    file = _target(args, current, ctx)
    if isinstance(file, ToolOutcome):
        return file
    edits_arg = args.get("edits")
    if not edits_arg:
        items: list[Any] = [args]
    elif isinstance(edits_arg, list):
        items = edits_arg
    else:
        return failure("edits must be a list", "Invalid edits payload")
    path = file.path or DEFAULT_PATH
    working = file.content
    applied = []
    try:
        # All on a working copy: the caller's file only changes if every edit succeeds.
        for item in items:
            edit = _parse_edit(item)
            working, replaced = _apply(working, edit, max_file_bytes)
            applied.append(
                {
                    "old_text": summarize_text(edit.old_text, EDIT_SUMMARY_CHARS),
                    "new_text": summarize_text(edit.new_text, EDIT_SUMMARY_CHARS),
                    "replaced": replaced,
                }
            )
    except _EditRejected as rejected:
        return rejected.outcome
    size = utf8_size(working)
    if size > max_file_bytes:
        # Only reachable when the file was over the limit before this call.
        return file_too_large(size, max_file_bytes)
    too_large = project_too_large(path, working, ctx, file)
    if too_large is not None:
        return too_large
    diff, first_changed = unified_diff(file.content, working, path)
    return ToolOutcome(
        ok=True,
        result={
            "content": f"Successfully edited file at {path}.",
            "details": {"diff": diff, "firstChangedLine": first_changed},
        },
        summary={
            "path": path,
            "edits": applied,
            "contentLength": len(working),
            "diff": diff,
            "firstChangedLine": first_changed,
        },
        updated_file=FileState(path, working),
    )


async def edit_file(
    args: dict[str, Any],
    file: FileState | None,
    ctx: ToolContext,
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> ToolOutcome:
    largest = max([len(f.content) for f in (*ctx.files, *([file] if file else []))], default=0)
    if largest > _THREAD_THRESHOLD:
        return await asyncio.to_thread(_edit_file, args, file, ctx, max_file_bytes)
    return _edit_file(args, file, ctx, max_file_bytes)


# -- retrieve_option -----------------------------------------------------------------------


async def retrieve_option(
    args: dict[str, Any], file: FileState | None, ctx: ToolContext
) -> ToolOutcome:
    number = _lenient_int(args.get("option_number"))
    index = number - 1 if number is not None else _lenient_int(args.get("index"))
    if index is None:
        return failure("retrieve_option requires option_number", "Missing option_number")
    available = len(ctx.option_codes)
    if not 0 <= index < available:
        return ToolOutcome(
            False,
            {
                "error": "Option index out of range",
                "option_number": index + 1,
                "available": available,
            },
            {"error": "Option index out of range", "available": available},
        )
    code = ctx.option_codes[index]
    if not code.strip():
        return ToolOutcome(
            False,
            {"error": "Option code is empty or unavailable", "option_number": index + 1},
            {"error": "Option code unavailable"},
        )
    return ToolOutcome(
        ok=True,
        result={"option_number": index + 1, "code": code},
        summary={
            "option_number": index + 1,
            "contentLength": len(code),
            "preview": summarize_text(code, OPTION_PREVIEW_CHARS),
        },
    )


def file_tool_handlers(
    *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, builder: ReactBuilder | None = None
) -> dict[str, ToolHandler]:
    """The three tools that need nothing but the request itself; with a `builder`, the
    writing tools build a react_vite project after each change (project_build.py)."""
    create: ToolHandler = functools.partial(create_file, max_file_bytes=max_file_bytes)
    edit: ToolHandler = functools.partial(edit_file, max_file_bytes=max_file_bytes)
    if builder is not None:
        create, edit = with_build(create, builder), with_build(edit, builder)
    return {"create_file": create, "edit_file": edit, "retrieve_option": retrieve_option}
