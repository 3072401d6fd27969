"""The project path rule against look-alikes (issue 35, item 11): names that NFKC, NFC/NFD
or a Windows system would turn into another name, Windows device names, and two paths of
one project that differ only in case. The tools' wording of a refusal is tested with the
file tools (tests/tools/test_validation.py)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.common.project_paths import WINDOWS_DEVICES, ProjectPaths, path_problem

_TRAILING_DOT = "a name may not end in '.' (Windows drops it, naming another file)"


def _char(shown: str) -> str:
    return (
        f"{shown} is not allowed: a path is ASCII letters, digits, '-', '_' and '.', in "
        "folders separated by / (so that no two paths look alike)"
    )


def _device(name: str) -> str:
    return (
        f"{name} is a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9), whatever "
        "the extension"
    )


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        # NFKC (or a Windows code page's best fit) makes these two ../x.html.
        ("\uff0e\uff0e/x.html", _char("U+FF0E")), ("\u2024\u2024/x.html", _char("U+2024")),
        ("\u0456ndex.html", _char("U+0456")),  # a Cyrillic i: no normalisation folds it
        ("cafe\u0301.html", _char("U+0301")), ("caf\u00e9.html", _char("U+00E9")),  # NFD, NFC
        ("\uff49ndex.html", _char("U+FF49")), ("~/x.html", _char("'~'")),
        ("my page.html", _char("' '")), ("   ", _char("' '")), ("a%2e%2e/x.html", _char("'%'")),
        ("pages./x.html", _TRAILING_DOT), (".../x.html", _TRAILING_DOT),
        ("CON.html", _device("CON")), ("nul.tar.js", _device("nul")),
        ("Com1.css", _device("Com1")), ("lpt9/page.html", _device("lpt9")),
        ("LPT0.htm", _device("LPT0")), ("aux", _device("aux")),
    ],
)  # fmt: skip
def test_look_alikes_and_devices_are_refused_naming_the_character(path: str, reason: str) -> None:
    assert path_problem(path) == reason


@pytest.mark.parametrize(
    "path", ["console.html", "com10.html", "nullable.css", "auxiliary/x.js", "_x.js", "a-b.htm"]
)
def test_names_that_only_start_like_a_device_are_accepted(path: str) -> None:
    assert path_problem(path) is None


def test_a_project_refuses_a_second_path_differing_only_in_case() -> None:
    project = ProjectPaths(["index.html", "css/site.css"])
    twin = "it differs from {}, a file of the project, only in case"
    assert project.problem("Index.html") == twin.format("index.html")
    assert project.problem("CSS/Site.CSS") == twin.format("css/site.css")
    assert project.problem("index.html") is None  # the file itself, rewritten
    assert project.problem("about.html") is None
    assert "index.html" in project
    assert "INDEX.html" not in project
    project.add("INDEX.html")  # a twin added anyway still names the first
    assert project.problem("index.HTML") == twin.format("index.html")


_PIECES = st.sampled_from(
    ["..", ".", "/", "a", "index", ".html", ".css", " ", "~", "%2e", "\uff0e", "\u2024",
     "\u0456", "\u0301", "e\u0301", "\u00e9", "con", "LPT1", "Nul", "\u212a"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.text() | st.lists(_PIECES, max_size=8).map("".join))
def test_an_accepted_path_has_no_other_spelling(path: str) -> None:
    if path_problem(path) is not None:
        return
    assert all(ch.isascii() and (ch.isalnum() or ch in "-_./") for ch in path)
    assert unicodedata.normalize("NFKC", path) == unicodedata.normalize("NFD", path) == path
    for segment in path.split("/"):
        assert segment.split(".")[0].upper() not in WINDOWS_DEVICES
        assert not segment.endswith(".")
