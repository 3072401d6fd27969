"""Pull the HTML document out of model text (a tool argument or a final answer).

Regexes here only match short pieces (a tag's name); spans between tags, and from a
tag's name to its `>`, are found with `str.find`, so a 400 KB answer without a closing
tag costs one linear scan instead of a backtracking search.
"""

from __future__ import annotations

import re

# A bounded path: an unterminated one stops at the next quote (each `<file path="` has one).
_FILE_OPEN = re.compile(r'<file\s+path\s*=\s*"[^"\n]{0,1024}"\s*>', re.IGNORECASE)
_FILE_CLOSE = "</file>"
_FENCE_OPEN = re.compile(r"```html[ \t]*\r?\n?", re.IGNORECASE)
_FENCE_CLOSE = re.compile(r"\r?\n?```")
# Tag names only: the attributes up to `>` (at most the limit) are found by `_tag`.
_DOCTYPE = re.compile(r"<!DOCTYPE\s+html\b", re.IGNORECASE)
_DOCTYPE_ATTRIBUTES = 1024
_HTML_OPEN = re.compile(r"<html(?=[\s>])", re.IGNORECASE)
_HTML_ATTRIBUTES = 4096
_HTML_CLOSE = re.compile(r"</html\s*>", re.IGNORECASE)


def extract_html_content(text: str) -> str:
    """The HTML document inside `text`, or the (unfenced) text itself when there is none.

    Order: unwrap the first `<file path="…">…</file>`, strip
    ```` ```html ```` fences, then prefer a `<!DOCTYPE html>…<html>…</html>` span over a
    bare `<html>…</html>` span.
    """
    text = _unwrap_file(text)
    text = _strip_fences(text)
    doctype = _tag(text, _DOCTYPE, _DOCTYPE_ATTRIBUTES)
    if doctype is not None:
        end = _document_end(text, doctype[1])
        if end is not None:
            return text[doctype[0] : end]
    open_tag = _tag(text, _HTML_OPEN, _HTML_ATTRIBUTES)
    if open_tag is not None:
        close = _HTML_CLOSE.search(text, open_tag[1])
        if close is not None:
            return text[open_tag[0] : close.end()]
    return text


def _tag(text: str, name: re.Pattern[str], limit: int, pos: int = 0) -> tuple[int, int] | None:
    """(start, end) of the first tag `name` opens whose `>` is at most `limit` characters
    after the name: what `name[^>]{0,limit}>` finds, without its rereading (each later
    `<html ` of an unterminated run read up to `limit` characters again: 1 MB of them took
    seconds). Every name before one `>` shares that `>`, found once."""
    gt = -1
    for found in name.finditer(text, pos):
        if gt < found.end():
            gt = text.find(">", found.end())
            if gt == -1:
                return None  # no `>` after this name, so none after any later one
        if gt - found.end() <= limit:
            return found.start(), gt + 1
    return None


def _unwrap_file(text: str) -> str:
    open_tag = _FILE_OPEN.search(text)
    if open_tag is None:
        return text
    close = text.find(_FILE_CLOSE, open_tag.end())
    if close == -1:
        return text
    # The inner text holds no `</file>`, so unwrapping once is the whole recursion.
    inner = text[open_tag.end() : close]
    # Exactly undo the `<file path="…">\n…\n</file>` framing used in prompts, so a
    # wrapped non-HTML body comes back byte-for-byte.
    inner = inner.removeprefix("\r\n") if inner.startswith("\r\n") else inner.removeprefix("\n")
    return inner.removesuffix("\r\n") if inner.endswith("\r\n") else inner.removesuffix("\n")


def _strip_fences(text: str) -> str:
    if _FENCE_OPEN.search(text) is None:
        # A bare ``` can be legitimate content (a markdown sample in a <pre>).
        return text
    return _FENCE_CLOSE.sub("", _FENCE_OPEN.sub("", text))


def _document_end(text: str, start: int) -> int | None:
    open_tag = _tag(text, _HTML_OPEN, _HTML_ATTRIBUTES, start)
    if open_tag is None:
        return None
    close = _HTML_CLOSE.search(text, open_tag[1])
    return None if close is None else close.end()
