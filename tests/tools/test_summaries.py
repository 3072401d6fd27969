from __future__ import annotations

from typing import Any

import pytest

from services.common.tool_summaries import summarize_text, summarize_tool_input


@pytest.mark.parametrize(
    ("value", "n", "expected"),
    [("", 3, ""), ("abc", 3, "abc"), ("abcd", 3, "abc..."), ("abcd", 0, "...")],
)
def test_summarize_text(value: str, n: int, expected: str) -> None:
    assert summarize_text(value, n) == expected


def test_create_file() -> None:
    content = "<html>" + "x" * 300
    summary = summarize_tool_input("create_file", {"path": "a.html", "content": content}, "b.html")
    assert summary == {"path": "a.html", "contentLength": 306, "preview": content[:200] + "..."}


@pytest.mark.parametrize(
    ("args", "file_path", "expected"),
    [
        ({"content": "<p>"}, "cur.html", "cur.html"),
        ({"path": None, "content": "<p>"}, "cur.html", "cur.html"),
        ({"path": "", "content": "<p>"}, None, None),
    ],
)
def test_create_file_path_falls_back_to_the_file(
    args: dict[str, Any], file_path: str | None, expected: str | None
) -> None:
    assert summarize_tool_input("create_file", args, file_path)["path"] == expected


def test_create_file_without_content() -> None:
    summary = summarize_tool_input("create_file", {"content": None}, None)
    assert summary == {"path": None, "contentLength": 0, "preview": ""}


def test_edit_file_single_form() -> None:
    old, new = "o" * 200, "n" * 10
    summary = summarize_tool_input(
        "edit_file", {"old_text": old, "new_text": new, "count": -1.0}, "index.html"
    )
    assert summary == {
        "path": "index.html",
        "edits": [{"old_text": "o" * 160 + "...", "new_text": new, "count": -1}],
    }
    assert type(summary["edits"][0]["count"]) is int


def test_edit_file_multi_form() -> None:
    args = {
        "path": "x.html",
        "old_text": "ignored",
        "edits": [
            {"old_text": "a", "new_text": "b"},
            {"old_text": "c", "new_text": None, "count": 2},
        ],
    }
    assert summarize_tool_input("edit_file", args, "index.html") == {
        "path": "x.html",
        "edits": [
            {"old_text": "a", "new_text": "b", "count": None},
            {"old_text": "c", "new_text": "", "count": 2},
        ],
    }


def test_edit_file_empty_edits_use_the_single_form() -> None:
    summary = summarize_tool_input(
        "edit_file", {"edits": [], "old_text": "a", "new_text": "b"}, None
    )
    assert summary["edits"] == [{"old_text": "a", "new_text": "b", "count": None}]


def test_generate_images() -> None:
    args = {"prompts": ["a cat", "a dog"]}
    assert summarize_tool_input("generate_images", args, None) == {
        "count": 2,
        "prompts": ["a cat", "a dog"],
    }


def test_generate_images_without_a_list_gives_the_raw_args() -> None:
    args = {"prompts": "a cat", "extra": 1}
    summary = summarize_tool_input("generate_images", args, None)
    assert summary == args
    assert summary is not args


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("remove_background", "image_urls"),
        ("save_assets", "asset_ids"),
        ("extract_assets", "asset_descriptions"),
    ],
)
def test_counted_lists(name: str, key: str) -> None:
    assert summarize_tool_input(name, {key: ["a", "b"]}, None) == {"count": 2, key: ["a", "b"]}
    assert summarize_tool_input(name, {key: None}, None) == {key: []}
    assert summarize_tool_input(name, {}, None) == {key: []}


def test_extract_assets_accepts_the_descriptions_alias() -> None:
    summary = summarize_tool_input("extract_assets", {"descriptions": ["logo"]}, None)
    assert summary == {"count": 1, "asset_descriptions": ["logo"]}


def test_edit_image() -> None:
    prompt = "p" * 300
    args = {"prompt": prompt, "image_urls": ["u1", "u2"], "aspect_ratio": "16:9"}
    assert summarize_tool_input("edit_image", args, None) == {
        "count": 2,
        "prompt": prompt,
        "image_urls": ["u1", "u2"],
        "aspect_ratio": "16:9",
    }


def test_edit_image_images_alias_and_missing_urls() -> None:
    summary = summarize_tool_input("edit_image", {"prompt": "p", "images": ["u"]}, None)
    assert summary == {"count": 1, "prompt": "p", "image_urls": ["u"], "aspect_ratio": None}
    assert summarize_tool_input("edit_image", {"prompt": "p"}, None) == {
        "prompt": "p",
        "image_urls": [],
    }


def test_retrieve_option() -> None:
    assert summarize_tool_input("retrieve_option", {"option_number": 2.0}, None) == {
        "option_number": 2,
        "index": None,
    }
    assert summarize_tool_input("retrieve_option", {"index": 0}, None) == {
        "option_number": None,
        "index": 0,
    }


@pytest.mark.parametrize("name", ["screenshot_preview", "mystery_tool"])
def test_raw_args_for_other_tools(name: str) -> None:
    args = {"anything": [1, 2]}
    assert summarize_tool_input(name, args, "index.html") == args
