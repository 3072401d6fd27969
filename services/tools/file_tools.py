"""The file tools: `create_file`, `edit_file` and `retrieve_option`.

Arguments come from a protobuf Struct, so every number is a float (2.0) and OpenAI's
strict schemas send null for each optional field it leaves out: null always means
"absent" here, and numbers are coerced to ints before they reach a result.
"""

from __future__ import annotations

import asyncio
import difflib
import math
import re
from dataclasses import dataclass
from typing import Any

from services.common.html import extract_html_content
from services.common.tool_summaries import summarize_text
from services.tools.types import FileState, ToolContext, ToolHandler, ToolOutcome, failure

DEFAULT_PATH = "index.html"
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


# -- create_file ---------------------------------------------------------------------------


async def create_file(
    args: dict[str, Any], file: FileState | None, ctx: ToolContext
) -> ToolOutcome:
    raw = args.get("content")
    if not isinstance(raw, str) or not raw:
        return failure("create_file requires non-empty content", "Missing content")
    path = _nonempty_str(args.get("path")) or (file.path if file else "") or DEFAULT_PATH
    content = extract_html_content(raw) or raw
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


def _apply(content: str, edit: _Edit) -> tuple[str, int]:
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


def _edit_file(args: dict[str, Any], file: FileState | None) -> ToolOutcome:
    if file is None or not file.content:
        return failure("No file exists yet. Call create_file first.", "No file to edit")
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
            working, replaced = _apply(working, edit)
            applied.append(
                {
                    "old_text": summarize_text(edit.old_text, EDIT_SUMMARY_CHARS),
                    "new_text": summarize_text(edit.new_text, EDIT_SUMMARY_CHARS),
                    "replaced": replaced,
                }
            )
    except _EditRejected as rejected:
        return rejected.outcome
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


async def edit_file(args: dict[str, Any], file: FileState | None, ctx: ToolContext) -> ToolOutcome:
    if file is not None and len(file.content) > _THREAD_THRESHOLD:
        return await asyncio.to_thread(_edit_file, args, file)
    return _edit_file(args, file)


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


def file_tool_handlers() -> dict[str, ToolHandler]:
    """The three tools that need nothing but the request itself."""
    return {"create_file": create_file, "edit_file": edit_file, "retrieve_option": retrieve_option}
