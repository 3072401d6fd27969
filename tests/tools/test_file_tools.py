from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.tools.file_tools import (
    create_file,
    edit_file,
    file_tool_handlers,
    retrieve_option,
    unified_diff,
)
from services.tools.types import FileState, ToolContext, ToolOutcome

CTX = ToolContext()
PAGE = "<html>\n<body>\n<h1>Hello</h1>\n<p>Hello</p>\n</body>\n</html>\n"
FILE = FileState("index.html", PAGE)


async def edit(args: dict[str, Any], file: FileState | None = FILE) -> ToolOutcome:
    return await edit_file(args, file, CTX)


def error_of(outcome: ToolOutcome) -> tuple[Any, Any]:
    assert outcome.ok is False
    assert outcome.updated_file is None
    return outcome.result["error"], outcome.summary["error"]


# -- create_file ---------------------------------------------------------------------------


@pytest.mark.parametrize("content", [None, "", 42, ["<html></html>"]])
async def test_create_requires_non_empty_content(content: Any) -> None:
    outcome = await create_file({"path": "index.html", "content": content}, None, CTX)
    assert outcome.result == {"error": "create_file requires non-empty content"}
    assert outcome.summary == {"error": "Missing content"}
    assert outcome.ok is False


async def test_create_requires_content_key() -> None:
    outcome = await create_file({}, None, CTX)
    assert error_of(outcome) == ("create_file requires non-empty content", "Missing content")


async def test_create_success_shapes() -> None:
    doc = "<!DOCTYPE html><html><body>x</body></html>"
    outcome = await create_file({"path": "page.html", "content": doc}, None, CTX)
    assert outcome.ok is True
    assert outcome.result == {
        "content": "Successfully created file at page.html.",
        "details": {"path": "page.html", "contentLength": len(doc)},
    }
    assert outcome.summary == {"path": "page.html", "contentLength": len(doc), "preview": doc}
    assert outcome.updated_file == FileState("page.html", doc)
    assert outcome.media == ()


@pytest.mark.parametrize(
    ("args_path", "file", "expected"),
    [
        ("new.html", FileState("old.html", "<p>x</p>"), "new.html"),
        (None, FileState("old.html", "<p>x</p>"), "old.html"),
        ("", FileState("old.html", "<p>x</p>"), "old.html"),
        (None, None, "index.html"),
        (None, FileState("", ""), "index.html"),
    ],
)
async def test_create_path_precedence(
    args_path: str | None, file: FileState | None, expected: str
) -> None:
    outcome = await create_file({"path": args_path, "content": "<p>y</p>"}, file, CTX)
    assert outcome.updated_file is not None
    assert outcome.updated_file.path == expected
    assert outcome.result["content"] == f"Successfully created file at {expected}."


async def test_create_stores_the_extracted_document() -> None:
    doc = "<!DOCTYPE html>\n<html><body>x</body></html>"
    outcome = await create_file({"content": f"```html\n{doc}\n```"}, None, CTX)
    assert outcome.updated_file == FileState("index.html", doc)
    assert outcome.result["details"]["contentLength"] == len(doc)


async def test_create_falls_back_to_raw_content_when_extraction_is_empty() -> None:
    raw = '<file path="index.html">\n\n</file>'
    outcome = await create_file({"content": raw}, None, CTX)
    assert outcome.updated_file == FileState("index.html", raw)


async def test_create_overwrites_an_existing_file() -> None:
    outcome = await create_file({"content": "<html>new</html>"}, FILE, CTX)
    assert outcome.updated_file == FileState("index.html", "<html>new</html>")


async def test_create_summary_preview_is_truncated_at_320() -> None:
    content = "<html>" + "a" * 400 + "</html>"
    outcome = await create_file({"content": content}, None, CTX)
    assert outcome.summary["preview"] == content[:320] + "..."
    assert outcome.summary["contentLength"] == len(content)
    assert type(outcome.summary["contentLength"]) is int


# -- edit_file: errors ---------------------------------------------------------------------


@pytest.mark.parametrize("file", [None, FileState("index.html", "")])
async def test_edit_without_a_file(file: FileState | None) -> None:
    outcome = await edit({"old_text": "a", "new_text": "b"}, file)
    assert outcome.result == {"error": "No file exists yet. Call create_file first."}
    assert outcome.summary == {"error": "No file to edit"}


@pytest.mark.parametrize("edits", ["old->new", {"old_text": "Hello"}, 5])
async def test_edits_must_be_a_list(edits: Any) -> None:
    outcome = await edit({"edits": edits})
    assert outcome.result == {"error": "edits must be a list"}
    assert outcome.summary == {"error": "Invalid edits payload"}


@pytest.mark.parametrize("old_text", [None, "", 7])
async def test_edit_requires_old_text(old_text: Any) -> None:
    outcome = await edit({"old_text": old_text, "new_text": "x"})
    assert outcome.result == {"error": "edit_file requires old_text"}
    assert outcome.summary == {"error": "Missing old_text"}


async def test_edit_requires_old_text_inside_edits() -> None:
    outcome = await edit({"edits": [{"old_text": "Hello", "new_text": "Hi"}, {"new_text": "x"}]})
    assert error_of(outcome) == ("edit_file requires old_text", "Missing old_text")


async def test_non_object_edit_item_counts_as_missing_old_text() -> None:
    outcome = await edit({"edits": ["Hello"]})
    assert error_of(outcome) == ("edit_file requires old_text", "Missing old_text")


async def test_old_text_not_found_carries_full_and_truncated_text() -> None:
    missing = "<section>" + "z" * 300
    outcome = await edit({"old_text": missing, "new_text": ""})
    assert outcome.ok is False
    assert outcome.result == {"error": "old_text not found", "old_text": missing}
    assert outcome.summary == {"error": "old_text not found", "old_text": missing[:160] + "..."}
    assert outcome.updated_file is None


async def test_short_missing_old_text_is_not_truncated() -> None:
    outcome = await edit({"old_text": "Bye", "new_text": "x"})
    assert outcome.summary == {"error": "old_text not found", "old_text": "Bye"}


@pytest.mark.parametrize("count", ["two", True, float("nan"), [1]])
async def test_invalid_count_is_rejected(count: Any) -> None:
    outcome = await edit({"old_text": "Hello", "new_text": "Hi", "count": count})
    assert error_of(outcome) == ("count must be an integer", "Invalid count")


# -- edit_file: success --------------------------------------------------------------------


async def test_single_edit_result_shape_and_diff() -> None:
    outcome = await edit_file(
        {"old_text": "a", "new_text": "c"}, FileState("index.html", "a\nb\na\n"), CTX
    )
    assert outcome.ok is True
    assert outcome.result["content"] == "Successfully edited file at index.html."
    assert set(outcome.result) == {"content", "details"}
    assert set(outcome.result["details"]) == {"diff", "firstChangedLine"}
    diff = outcome.result["details"]["diff"]
    assert diff == "--- index.html\n+++ index.html\n@@ -1,3 +1,3 @@\n-a\n+c\n b\n a\n"
    assert outcome.result["details"]["firstChangedLine"] == 1
    assert outcome.summary == {
        "path": "index.html",
        "edits": [{"old_text": "a", "new_text": "c", "replaced": 1}],
        "contentLength": 6,
        "diff": diff,
        "firstChangedLine": 1,
    }
    # Only the first occurrence changes when no count is given.
    assert outcome.updated_file == FileState("index.html", "c\nb\na\n")


async def test_path_argument_is_ignored() -> None:
    outcome = await edit({"path": "other.html", "old_text": "<h1>", "new_text": "<h2>"})
    assert outcome.updated_file is not None
    assert outcome.updated_file.path == "index.html"
    assert outcome.summary["path"] == "index.html"
    assert "--- index.html\n+++ index.html\n" in outcome.result["details"]["diff"]


async def test_first_changed_line_is_the_new_start_of_the_first_hunk() -> None:
    content = "".join(f"line {i}\n" for i in range(1, 21))
    file = FileState("index.html", content)
    outcome = await edit_file({"old_text": "line 10\n", "new_text": "ten\n"}, file, CTX)
    # Three lines of context precede the change, so the hunk opens at line 7.
    assert outcome.result["details"]["firstChangedLine"] == 7
    assert "@@ -7,7 +7,7 @@" in outcome.result["details"]["diff"]


@pytest.mark.parametrize(
    ("count", "expected", "replaced"),
    [
        (None, "a-b-a-a", 1),
        (1, "a-b-a-a", 1),
        (2, "a-b-b-a", 2),
        (2.0, "a-b-b-a", 2),
        ("2", "a-b-b-a", 2),
        (3, "a-b-b-b", 3),
        (10, "a-b-b-b", 3),
        (-1, "a-b-b-b", 3),
        (-7, "a-b-b-b", 3),
        (-1.0, "a-b-b-b", 3),
    ],
)
async def test_count_semantics(count: Any, expected: str, replaced: int) -> None:
    file = FileState("index.html", "a-a-a-a")
    outcome = await edit_file({"old_text": "-a", "new_text": "-b", "count": count}, file, CTX)
    assert outcome.updated_file == FileState("index.html", expected)
    assert outcome.summary["edits"][0]["replaced"] == replaced
    assert type(outcome.summary["edits"][0]["replaced"]) is int


async def test_count_zero_is_reported_as_not_found() -> None:
    outcome = await edit({"old_text": "Hello", "new_text": "Hi", "count": 0})
    assert outcome.result == {"error": "old_text not found", "old_text": "Hello"}


@pytest.mark.parametrize("edits", [None, [], {}, ""])
async def test_falsy_edits_use_the_single_form(edits: Any) -> None:
    outcome = await edit({"edits": edits, "old_text": "<h1>Hello", "new_text": "<h1>Hi"})
    assert outcome.updated_file is not None
    assert "<h1>Hi</h1>" in outcome.updated_file.content


async def test_edits_apply_sequentially_to_a_working_copy() -> None:
    outcome = await edit(
        {
            "edits": [
                {"old_text": "<h1>Hello</h1>", "new_text": "<h1>Welcome</h1>"},
                # Only exists after the first edit ran.
                {"old_text": "Welcome", "new_text": "Welcome back"},
                {"old_text": "Hello", "new_text": "Hey", "count": -1},
            ]
        }
    )
    assert outcome.updated_file is not None
    assert outcome.updated_file.content == PAGE.replace("<h1>Hello", "<h1>Welcome back").replace(
        "<p>Hello", "<p>Hey"
    )
    assert [e["replaced"] for e in outcome.summary["edits"]] == [1, 1, 1]


async def test_a_failing_edit_rolls_back_the_whole_call() -> None:
    outcome = await edit(
        {
            "edits": [
                {"old_text": "<h1>Hello</h1>", "new_text": "<h1>Changed</h1>"},
                {"old_text": "not in the page", "new_text": "x"},
            ]
        }
    )
    assert outcome.ok is False
    assert outcome.updated_file is None
    assert outcome.result == {"error": "old_text not found", "old_text": "not in the page"}
    assert FILE.content == PAGE


async def test_null_new_text_deletes() -> None:
    outcome = await edit({"old_text": "<p>Hello</p>\n", "new_text": None})
    assert outcome.updated_file is not None
    assert "<p>" not in outcome.updated_file.content


async def test_edit_summary_texts_are_truncated_at_140() -> None:
    old = "<h1>Hello</h1>"
    new = "n" * 200
    content = old + "o" * 150
    file = FileState("index.html", content)
    outcome = await edit_file({"old_text": content, "new_text": new}, file, CTX)
    assert outcome.summary["edits"] == [
        {"old_text": content[:140] + "...", "new_text": new[:140] + "...", "replaced": 1}
    ]


async def test_no_op_edit_has_an_empty_diff() -> None:
    outcome = await edit({"old_text": "Hello", "new_text": "Hello"})
    assert outcome.ok is True
    assert outcome.result["details"] == {"diff": "", "firstChangedLine": None}


async def test_diff_lines_stay_separate_without_a_final_newline() -> None:
    diff, first = unified_diff("a\nb", "a\nc", "index.html")
    assert diff == "--- index.html\n+++ index.html\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    assert first == 1


async def test_large_files_are_edited_the_same_way() -> None:
    content = "<div>row</div>\n" * 20_000 + "<footer>end</footer>\n"
    file = FileState("index.html", content)
    outcome = await edit_file({"old_text": "end", "new_text": "fin"}, file, CTX)
    assert outcome.updated_file == FileState("index.html", content.replace("end", "fin"))
    assert outcome.result["details"]["firstChangedLine"] == 20_001 - 3


@given(
    prefix=st.text(max_size=40),
    old=st.text(min_size=1, max_size=8),
    middle=st.text(max_size=40),
    suffix=st.text(max_size=40),
    new=st.text(max_size=8),
)
async def test_replace_all_matches_str_replace(
    prefix: str, old: str, middle: str, suffix: str, new: str
) -> None:
    content = prefix + old + middle + old + suffix
    file = FileState("index.html", content)
    outcome = await edit_file({"old_text": old, "new_text": new, "count": -1}, file, CTX)
    assert outcome.ok is True
    assert outcome.updated_file == FileState("index.html", content.replace(old, new))
    assert outcome.summary["edits"][0]["replaced"] == content.count(old)


# -- retrieve_option -----------------------------------------------------------------------

OPTIONS = ToolContext(option_codes=("<html>one</html>", "<html>two</html>", "  "))


async def option(args: dict[str, Any], ctx: ToolContext = OPTIONS) -> ToolOutcome:
    return await retrieve_option(args, None, ctx)


@pytest.mark.parametrize(
    "args",
    [
        {"option_number": 2},
        {"option_number": 2.0},
        {"option_number": "2"},
        {"index": 1},
        {"index": 1.0},
        {"option_number": 2, "index": 0},
        {"option_number": None, "index": 1},
        {"option_number": "two", "index": 1},
    ],
)
async def test_retrieve_option_success(args: dict[str, Any]) -> None:
    outcome = await option(args)
    assert outcome.ok is True
    assert outcome.result == {"option_number": 2, "code": "<html>two</html>"}
    assert outcome.summary == {
        "option_number": 2,
        "contentLength": len("<html>two</html>"),
        "preview": "<html>two</html>",
    }
    assert type(outcome.result["option_number"]) is int
    assert outcome.updated_file is None


async def test_retrieve_option_preview_is_truncated_at_200() -> None:
    code = "<html>" + "x" * 300 + "</html>"
    outcome = await option({"option_number": 1}, ToolContext(option_codes=(code,)))
    assert outcome.summary["preview"] == code[:200] + "..."
    assert outcome.result["code"] == code


@pytest.mark.parametrize("args", [{}, {"option_number": None, "index": None}, {"index": "x"}])
async def test_retrieve_option_requires_a_number(args: dict[str, Any]) -> None:
    outcome = await option(args)
    assert outcome.result == {"error": "retrieve_option requires option_number"}
    assert outcome.summary == {"error": "Missing option_number"}


@pytest.mark.parametrize(
    ("args", "reported"),
    [({"option_number": 4}, 4), ({"option_number": 0}, 0), ({"index": -1}, 0), ({"index": 3}, 4)],
)
async def test_retrieve_option_out_of_range(args: dict[str, Any], reported: int) -> None:
    outcome = await option(args)
    assert outcome.ok is False
    assert outcome.result == {
        "error": "Option index out of range",
        "option_number": reported,
        "available": 3,
    }
    assert outcome.summary == {"error": "Option index out of range", "available": 3}


async def test_retrieve_option_with_no_options() -> None:
    outcome = await option({"option_number": 1}, ToolContext())
    assert outcome.summary == {"error": "Option index out of range", "available": 0}


@pytest.mark.parametrize("codes", [("",), ("  \n",)])
async def test_retrieve_option_empty_code(codes: tuple[str, ...]) -> None:
    outcome = await option({"option_number": 1}, ToolContext(option_codes=codes))
    assert outcome.result == {"error": "Option code is empty or unavailable", "option_number": 1}
    assert outcome.summary == {"error": "Option code unavailable"}


def test_file_tool_handlers_registry() -> None:
    handlers = file_tool_handlers(max_file_bytes=1234)
    assert set(handlers) == {"create_file", "edit_file", "retrieve_option"}
    # The size limit is bound into the two tools that produce a file.
    for name, tool in (("create_file", create_file), ("edit_file", edit_file)):
        bound = handlers[name]
        assert isinstance(bound, functools.partial)
        assert bound.func is tool
        assert bound.keywords == {"max_file_bytes": 1234}
    assert handlers["retrieve_option"] is retrieve_option
