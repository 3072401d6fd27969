"""Image references in a page, found and rewritten in one pass, in time linear in the page
(the tags come from `services.common.markup`'s scanner)."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath
from typing import Literal
from urllib.parse import unquote, urlsplit

from services.common.markup import ATTRIBUTE, RawText, scan_markup

# A reference as written in the page -> its replacement, or None to leave it as it is.
Visit = Callable[[str], str | None]

IMAGE_EXTS = frozenset({"png", "jpg", "jpeg", "gif", "webp", "svg", "avif", "ico", "bmp"})
# How many tokens pass between two looks at the clock.
_DEADLINE_EVERY = 1024


class ExportTooComplex(Exception):
    """The page's transform ran past its time budget."""


class CpuBudget:
    """CPU seconds a page's transform may use, over all its passes and worker threads.

    CPU time rather than wall time: a busy machine slows an export down but must not
    turn a page that is cheap to process into an error.
    """

    def __init__(self, seconds: float) -> None:
        self._left = seconds

    def over(self, used: float) -> bool:
        return used >= self._left

    def spend(self, used: float) -> None:
        self._left -= used


# --- Rewriting references ---

# Possessive throughout: each `url(` is read once up to the next quote or parenthesis,
# whatever follows (a lazy URL next to optional spaces backtracked cubically on
# `url(` and a long run of spaces). The URL's trailing spaces are dropped in code.
_CSS_URL = re.compile(
    r"""url\(\s*+(?:(?P<quote>["'])(?P<quoted>[^"'()]*+)(?P=quote)|(?P<bare>[^"'()]*+))\s*+\)""",
    re.IGNORECASE,
)
# A superset of the attribute names `style` lowercases from: tags without it skip parsing.
_STYLE_HINT = re.compile("style", re.IGNORECASE)
_URL_HINT = re.compile(r"url\(", re.IGNORECASE)
_CSS_IMPORT_BEFORE = re.compile(r"@import\s*$", re.IGNORECASE)
_SCRIPT_URL = re.compile(r"https?://[^\s\"'`<>(){}\[\]\\|^]+", re.IGNORECASE)
# The HTML candidate grammar: a URL is a run of non-space characters not ending in a comma
# (so data URLs, whose commas come before any space, survive), then descriptors up to a comma.
_SRCSET_CANDIDATE = re.compile(r"(?P<url>[^\s,](?:\S*[^\s,])?)(?P<descriptors>[^,]*)")

_URL_ATTRS: dict[str, dict[str, Literal["url", "srcset"]]] = {
    "img": {"src": "url", "srcset": "srcset"},
    "source": {"srcset": "srcset"},
    "image": {"href": "url", "xlink:href": "url"},
    "link": {"href": "url"},
}


def rewrite_references(code: str, visit: Visit, *, budget: CpuBudget | None = None) -> str:
    """Calls `visit` on every image reference in document order; splices in its answers.

    References: `img` src/srcset, `source` srcset, svg `image` href, icon `link` href,
    `url()` in `<style>` and in style attributes, and absolute http(s) URLs inside
    `<script>` that look like images. Attribute values are passed unescaped. Linear in
    the page (see above); past `budget` it raises `ExportTooComplex` instead of finishing.
    """
    started = time.thread_time()
    pieces: list[str] = []
    done = 0
    for count, token in enumerate(scan_markup(code)):
        if (
            budget is not None
            and count % _DEADLINE_EVERY == 0
            and budget.over(time.thread_time() - started)
        ):
            raise ExportTooComplex()
        if isinstance(token, RawText):
            body = code[token.body_start : token.end]
            is_style = token.name == "style"
            rewritten = _rewrite_css(body, visit) if is_style else _rewrite_script(body, visit)
            if rewritten != body:
                pieces += [code[done : token.body_start], rewritten]
                done = token.end
            continue
        tag = code[token.start : token.end]
        new_tag = _rewrite_tag(tag, token.name.lower(), visit)
        if new_tag is not tag:
            pieces += [code[done : token.start], new_tag]
            done = token.end
    if budget is not None:
        budget.spend(time.thread_time() - started)
    return "".join([*pieces, code[done:]]) if pieces else code


def _rewrite_tag(tag: str, name: str, visit: Visit) -> str:
    if name not in _URL_ATTRS and (
        _STYLE_HINT.search(tag, 1 + len(name)) is None
        or ("&" not in tag and _URL_HINT.search(tag) is None)
    ):
        return tag  # nothing in it can hold a reference: no style, or a style without url(
    attrs = [m for m in ATTRIBUTE.finditer(tag, 1 + len(name), len(tag) - 1) if m.group("value")]
    url_attrs = _URL_ATTRS.get(name, {})
    if name == "link" and not _is_icon_link(attrs):
        url_attrs = {}
    pieces: list[str] = []
    done = 0
    for attr in attrs:
        attr_name = attr.group("name").lower()
        kind = "css" if attr_name == "style" else url_attrs.get(attr_name)
        if kind is None:
            continue
        raw = attr.group("value")
        if kind == "css" and "&" not in raw and _URL_HINT.search(raw) is None:
            continue  # no url( even once character references are decoded
        quote = raw[0] if raw[0] in "\"'" else ""
        value = html.unescape(raw[1:-1] if quote else raw)
        if kind == "url":
            replacement = visit(value.strip())
            new_value = value if replacement is None else replacement
        elif kind == "srcset":
            new_value = _rewrite_srcset(value, visit)
        else:
            new_value = _rewrite_css(value, visit)
        if new_value == value:
            continue
        quote = quote or '"'
        escaped = new_value.replace("&", "&amp;").replace(
            quote, "&quot;" if quote == '"' else "&#39;"
        )
        pieces += [tag[done : attr.start("value")], quote, escaped, quote]
        done = attr.end("value")
    return "".join([*pieces, tag[done:]]) if pieces else tag


def _is_icon_link(attrs: Iterable[re.Match[str]]) -> bool:
    for attr in attrs:
        if attr.group("name").lower() == "rel":
            rel = html.unescape(attr.group("value").strip("\"'")).lower()
            # "icon", "shortcut icon", "apple-touch-icon", "mask-icon"
            return any(token.endswith("icon") for token in rel.split())
    return False


def _rewrite_srcset(value: str, visit: Visit) -> str:
    def on_candidate(match: re.Match[str]) -> str:
        replacement = visit(match.group("url"))
        return match.group(0) if replacement is None else replacement + match.group("descriptors")

    return _SRCSET_CANDIDATE.sub(on_candidate, value)


def _rewrite_css(css: str, visit: Visit) -> str:
    def on_url(match: re.Match[str]) -> str:
        if _CSS_IMPORT_BEFORE.search(css, max(0, match.start() - 32), match.start()):
            return match.group(0)  # a stylesheet, not an image
        quoted = match.group("quoted")
        replacement = visit(match.group("bare").rstrip() if quoted is None else quoted)
        quote = match.group("quote") or ""
        return match.group(0) if replacement is None else f"url({quote}{replacement}{quote})"

    return _CSS_URL.sub(on_url, css)


def _rewrite_script(script: str, visit: Visit) -> str:
    def on_url(match: re.Match[str]) -> str:
        text = match.group(0)
        url = text.rstrip(".,;:!?")  # sentence punctuation after a URL in a comment or string
        if not _counts_in_script(url):
            return text
        replacement = visit(url)
        return text if replacement is None else replacement + text[len(url) :]

    return _SCRIPT_URL.sub(on_url, script)


def _counts_in_script(url: str) -> bool:
    # Scripts mention many URLs (APIs, CDNs, links); only images are worth bundling.
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    host = (parts.hostname or "").rstrip(".")
    if host == "replicate.delivery" or host.endswith(".replicate.delivery"):
        return True
    return path_ext(parts.path) in IMAGE_EXTS


def path_ext(path: str) -> str:
    """The lowercased extension of a URL path, without the dot."""
    return PurePosixPath(unquote(path)).suffix.lower().lstrip(".")
