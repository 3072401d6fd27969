"""Which paths may name a file of a generated project (the tools' and the requests' rule).

A project is a set of relative files: HTML pages and the CSS and JavaScript they share.
Upstream only ever uses index.html, but a model asked for "about.html" (or a site of
several pages) has a reason to, and any such name is harmless: `/`-separated segments
with no `..`, `.` or empty segment, no absolute or drive form, no backslash, colon,
Windows-reserved character or invisible character, ending in .html, .htm, .css or .js.
"""

from __future__ import annotations

import unicodedata

MAX_PATH_CHARS = 255
ENTRY_PATH = "index.html"  # a project's entry page, the one file of a one-file project
PROJECT_SUFFIXES = (".html", ".htm", ".css", ".js")
HTML_SUFFIXES = (".html", ".htm")
_WINDOWS_RESERVED = frozenset('<>:"|?*')


def path_problem(path: str) -> str | None:
    """Why `path` cannot name a file of the project, or None when it can."""
    if not path:
        return "it is empty"
    if len(path) > MAX_PATH_CHARS:
        return f"it is longer than {MAX_PATH_CHARS} characters"
    if any(_invisible(char) for char in path):
        return "it contains control or invisible characters"
    if "\\" in path:
        return "backslashes are not allowed; separate folders with /"
    if path.startswith("/"):
        return "absolute paths are not allowed"
    if ":" in path:
        return "drive letters, URLs and colons are not allowed"
    if any(char in _WINDOWS_RESERVED for char in path):
        return 'the characters < > " | ? * are not allowed'
    segments = path.split("/")
    if ".." in segments:
        return ".. segments are not allowed"
    if any(segment in ("", ".") for segment in segments):
        return "empty or . segments are not allowed"
    name = segments[-1]
    if not any(name.lower().endswith(s) and len(name) > len(s) for s in PROJECT_SUFFIXES):
        return "it must end in .html, .htm, .css or .js"
    return None


def _invisible(char: str) -> bool:
    # C* covers control, format (bidi overrides, zero-width), surrogate, private and
    # unassigned code points; Z* other than the plain space are line breaks or blanks that
    # look like a space but name a different file.
    category = unicodedata.category(char)
    return category[0] == "C" or (category[0] == "Z" and char != " ")


def is_html(path: str) -> bool:
    return path.lower().endswith(HTML_SUFFIXES)
