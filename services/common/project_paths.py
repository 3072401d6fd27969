"""Which paths may name a file of a generated project (the tools' and the requests' rule).

A project is a set of relative files: HTML pages and the CSS and JavaScript they share.
Upstream only ever uses index.html, but a model asked for "about.html" (or a site of
several pages) has a reason to, and such a name is harmless when it names one file, and
the same one, everywhere the project goes: the preview's URLs, a zip unpacked on Windows
or macOS. So: `/`-separated segments of ASCII letters, digits, `-`, `_` and `.`, with no
`..`, `.` or empty segment and none ending in `.` (Windows drops the dot), no Windows
device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9, whatever the extension), ending in .html,
.htm, .css or .js; and within one project no two paths that differ only in case.

Why ASCII rather than "refused when NFKC changes it": NFKC folding catches `．．/x.html`
(U+FF0E) and `․․/x.html` (U+2024), which NFKC or a Windows code page turn into `../`,
and NFC/NFD twins, but not the Cyrillic `і` of `іndex.html`, which no normalisation
folds: telling such look-alikes apart takes the confusables tables, and a page's file
names need none of those characters. A refusal names the character by its code point.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from services.common.react_project import BUILT_PATH, SOURCE_SUFFIXES, ProjectBuild

MAX_PATH_CHARS = 255
ENTRY_PATH = "index.html"  # a project's entry page, the one file of a one-file project
PROJECT_SUFFIXES = (".html", ".htm", ".css", ".js")
HTML_SUFFIXES = (".html", ".htm")
_WINDOWS_RESERVED = frozenset('<>:"|?*')
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./")
# Names Windows gives its devices in every folder, with any extension (`CON.html` opens
# the console); COM0 and LPT0 too, as Windows 11 reserves them.
WINDOWS_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL", *(f"{p}{n}" for p in ("COM", "LPT") for n in range(10))}
)


def path_problem(path: str, build: ProjectBuild = "none") -> str | None:
    """Why `path` cannot name a file of a project, or None when it can (see also
    `ProjectPaths`, which knows the project's other files). A built project (react_vite,
    docs/react.md) takes TypeScript sources and keeps `dist/` for its build."""
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
    unsafe = next((char for char in path if char not in _SAFE), None)
    if unsafe is not None:
        return (
            f"{_shown(unsafe)} is not allowed: a path is ASCII letters, digits, '-', '_' and "
            "'.', in folders separated by / (so that no two paths look alike)"
        )
    segments = path.split("/")
    if ".." in segments:
        return ".. segments are not allowed"
    if any(segment in ("", ".") for segment in segments):
        return "empty or . segments are not allowed"
    if any(segment.endswith(".") for segment in segments):
        return "a name may not end in '.' (Windows drops it, naming another file)"
    device = next((s for s in segments if s.split(".")[0].upper() in WINDOWS_DEVICES), None)
    if device is not None:
        return (
            f"{device.split('.')[0]} is a Windows device name (CON, PRN, AUX, NUL, COM0-9, "
            "LPT0-9), whatever the extension"
        )
    name = segments[-1]
    suffixes = SOURCE_SUFFIXES if build == "react_vite" else PROJECT_SUFFIXES
    if not any(name.lower().endswith(s) and len(name) > len(s) for s in suffixes):
        return f"it must end in {', '.join(suffixes[:-1])} or {suffixes[-1]}"
    if build == "react_vite" and segments[0].lower() == BUILT_PATH.split("/")[0]:
        return "dist/ holds the build's output; write the sources (index.html, src/...)"
    return None


class ProjectPaths:
    """The paths of one project, by the file they name where case does not count
    (Windows, macOS): `problem` checks one more path against the rule and the others
    in constant time, so checking a whole project stays linear in its size."""

    def __init__(self, paths: Iterable[str] = (), build: ProjectBuild = "none") -> None:
        self._build: ProjectBuild = build
        self._by_fold: dict[str, str] = {}
        for path in paths:
            self.add(path)

    def add(self, path: str) -> None:
        self._by_fold.setdefault(fold(path), path)

    def __contains__(self, path: str) -> bool:
        return self._by_fold.get(fold(path)) == path

    def problem(self, path: str) -> str | None:
        """Why `path` cannot be one of these paths' project (`path_problem`, or a path
        already there that differs from it only in case), or None."""
        problem = path_problem(path, self._build)
        if problem is not None:
            return problem
        twin = self._by_fold.get(fold(path), path)
        if twin != path:
            return f"it differs from {twin}, a file of the project, only in case"
        return None


def fold(path: str) -> str:
    """What two paths share when a file system takes them for one: NFC, then casefold."""
    return unicodedata.normalize("NFC", path).casefold()


def _shown(char: str) -> str:
    # A code point, never the character itself: it may be invisible or look like another.
    return repr(char) if char.isascii() and char.isprintable() else f"U+{ord(char):04X}"


def _invisible(char: str) -> bool:
    # C* covers control, format (bidi overrides, zero-width), surrogate, private and
    # unassigned code points; Z* other than the plain space are line breaks or blanks that
    # look like a space but name a different file.
    category = unicodedata.category(char)
    return category[0] == "C" or (category[0] == "Z" and char != " ")


def is_html(path: str) -> bool:
    return path.lower().endswith(HTML_SUFFIXES)
