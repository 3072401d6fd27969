"""Pull the HTML document out of model text (a tool argument or a final answer).

Regexes here only match short, bounded pieces (tags); spans between tags are found
with `str.find`, so a 400 KB answer without a closing tag costs one linear scan
instead of a backtracking search.
"""

from __future__ import annotations

import re

# Bounded attribute runs: an unterminated tag must not make every later `<` rescan
# to the end of the text.
_FILE_OPEN = re.compile(r'<file\s+path\s*=\s*"[^"\n]{0,1024}"\s*>', re.IGNORECASE)
_FILE_CLOSE = "</file>"
_FENCE_OPEN = re.compile(r"```html[ \t]*\r?\n?", re.IGNORECASE)
_FENCE_CLOSE = re.compile(r"\r?\n?```")
_DOCTYPE = re.compile(r"<!DOCTYPE\s+html\b[^>]{0,1024}>", re.IGNORECASE)
_HTML_OPEN = re.compile(r"<html(?=[\s>])[^>]{0,4096}>", re.IGNORECASE)
_HTML_CLOSE = re.compile(r"</html\s*>", re.IGNORECASE)


def extract_html_content(text: str) -> str:
    """The HTML document inside `text`, or the (unfenced) text itself when there is none.

    Order: unwrap the first `<file path="…">…</file>`, strip
    ```` ```html ```` fences, then prefer a `<!DOCTYPE html>…<html>…</html>` span over a
    bare `<html>…</html>` span.
    """
    text = _unwrap_file(text)
    text = _strip_fences(text)
    doctype = _DOCTYPE.search(text)
    if doctype is not None:
        end = _document_end(text, doctype.end())
        if end is not None:
            return text[doctype.start() : end]
    open_tag = _HTML_OPEN.search(text)
    if open_tag is not None:
        close = _HTML_CLOSE.search(text, open_tag.end())
        if close is not None:
            return text[open_tag.start() : close.end()]
    return text


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
    open_tag = _HTML_OPEN.search(text, start)
    if open_tag is None:
        return None
    close = _HTML_CLOSE.search(text, open_tag.end())
    return None if close is None else close.end()
