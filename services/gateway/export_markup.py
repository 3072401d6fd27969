"""Image references in a page, found and rewritten in one pass, in time linear in the page.

It finds exactly what this grammar matched, scanning left to right and retrying one
character later wherever nothing matched (the pattern export used to run as a regex):

    <!--.*?-->                                      a comment, left alone
    <(script|style)\\b RUN > BODY  (BODY up to the first </script\\s*> or </style\\s*>)
    <[a-zA-Z][^\\s/>]* RUN >                         a tag (its name may give back characters)

    RUN = (?:"[^"]*"|'[^']*'|[^'">])*+

A backtracking engine retries every `<` of an unclosed page, and each retry reads to the
end: 56 KB of `<a x="` took seconds, 1 MB hours. Here each retry reuses what earlier ones
learnt, so every character is examined a bounded number of times:

- A RUN read from outside any quote at a given `"`, `'` or `>` always ends the same way,
  so that answer is remembered per character ("events"): a later tag reaching a known
  event stops there. Quoted stretches are skipped with `str.find`.
- A tag name's possible ends are the end of its run of name characters and the quotes in
  it; every `<` inside that run shares the same answer, worked out once per run.
- The next `-->`, `</script>` and `</style>` after a point, and the end of a name run, are
  remembered, so `<!--<!--…`, `<script><script>…` and `<a<a<a…` cost one search each.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal
from urllib.parse import unquote, urlsplit

# Same character classes and flags as the grammar above, so non-ASCII letters that
# IGNORECASE folds (ſ, K, İ, ı) are treated identically.
_RAW_OPEN = re.compile(r"<(script|style)\b", re.IGNORECASE)
_NAME_RUN = re.compile(r"[^\s/>]*")
_EVENT = re.compile(r"[\"'>]")
_RAW_CLOSE = {
    "script": re.compile(r"</script\s*>", re.IGNORECASE),
    "style": re.compile(r"</style\s*>", re.IGNORECASE),
}
_NONE = -1


def _skip_pattern(stop_at_script: bool, stop_at_style: bool) -> re.Pattern[str]:
    """Text the scanner can pass at C speed: no `<`, a `<` that starts nothing, or a tag
    that is exactly what the grammar matches and that export leaves alone.

    That tag's name ends at a space, `/` or `>` (so it is the whole name run), no quote
    or `<` comes before its `>` except inside closed quotes holding neither `<` nor `>`
    (so its RUN ends at that `>`), it is not img/source/image/link, and "style" is
    nowhere after its name. Everything else stops the skip for the full scan. An attempt
    reads at most up to the next `<` or `>`, so a failed one costs what it read once.
    """
    raw = "|".join(n for n, stop in (("script", stop_at_script), ("style", stop_at_style)) if stop)
    not_raw = rf"(?!(?:{raw})\b)" if raw else ""
    tag = (
        rf"<{not_raw}(?!(?:img|source|image|link)[\s/>])[a-zA-Z][^\s/>\"'<]*+(?=[\s/>])"
        r"""(?:[^"'<>s]++|s(?!tyle)|"(?:[^"<>s]|s(?!tyle))*+"|'(?:[^'<>s]|s(?!tyle))*+')*+>"""
    )
    return re.compile(rf"(?:[^<]++|<(?![a-zA-Z]|!--)|{tag})*+", re.IGNORECASE)


# A tag of the same shape, whatever it holds: its name and `>` are the grammar's answer.
_PLAIN_TAG = re.compile(
    r"""<([a-zA-Z][^\s/>"'<]*+)(?=[\s/>])(?:[^"'<>]++|"[^"<>]*+"|'[^'<>]*+')*+>""",
    re.IGNORECASE,
)

# Keyed by (a `</script>` may follow, a `</style>` may follow): once none is left, that
# element is a plain tag and can be skipped too.
_SKIPS = {(a, b): _skip_pattern(a, b) for a in (True, False) for b in (True, False)}


@dataclass(frozen=True, slots=True)
class Tag:
    start: int
    end: int  # after the `>`
    name: str  # as written


@dataclass(frozen=True, slots=True)
class RawText:
    """`<script …>` or `<style …>` and its body; the closing tag is not part of it."""

    start: int
    body_start: int  # after the opening tag's `>`
    end: int  # where the closing tag starts
    name: str  # "script" or "style"


def scan_markup(code: str) -> Iterator[Tag | RawText]:
    """Every tag and script/style element of `code`, in document order (comments skipped)."""
    return _Scanner(code).tokens()


class _Cursor:
    """Answers "the next match of `pattern` at or after `pos`" from the last answer when
    nothing can lie between: repeated questions about one stretch cost one search."""

    __slots__ = ("_code", "_found", "_from", "_search")

    def __init__(self, code: str, pattern: re.Pattern[str]) -> None:
        self._code = code
        self._search = pattern.search
        self._from = len(code) + 1
        self._found = _NONE

    def next(self, pos: int) -> int:
        if self._from <= pos and (self._found == _NONE or pos <= self._found):
            return self._found
        match = self._search(self._code, pos)
        self._from, self._found = pos, (match.start() if match else _NONE)
        return self._found


class _Scanner:
    def __init__(self, code: str) -> None:
        self._code = code
        # event position (read from outside a quote) -> its tag's `>`, or _NONE
        self._memo: dict[int, int] = {}
        self._events = _Cursor(code, _EVENT)  # for tag starts, mostly increasing
        self._after_quote = _Cursor(code, _EVENT)  # after a closing quote: one search each
        self._comment_close = _Cursor(code, re.compile(re.escape("-->")))
        self._raw_close = {name: _Cursor(code, p) for name, p in _RAW_CLOSE.items()}
        self._run_from = len(code) + 1
        self._run_end = 0
        # The name run last worked out: its end, the lowest name end checked, the best
        # (longest) name end whose tag closes, and that tag's `>`.
        self._best_run = _NONE
        self._best_low = 0
        self._best_k = _NONE
        self._best_gt = _NONE
        # per quote character: (high, low, the last one in [low, high) or _NONE)
        self._last_quote = {'"': (_NONE, 0, _NONE), "'": (_NONE, 0, _NONE)}

    def tokens(self) -> Iterator[Tag | RawText]:
        code = self._code
        # Every token ends with a `>`: after the last one nothing can match.
        last_gt = code.rfind(">")
        closable = {"script": True, "style": True}
        skip = _SKIPS[True, True].match
        pos = 0
        while True:
            start = skip(code, pos).end()  # type: ignore[union-attr]  # `*+` always matches
            if start >= last_gt:
                return
            if code.startswith("<!--", start):
                close = self._comment_close.next(start + 4)
                pos = start + 1 if close == _NONE else close + 3
                continue
            raw = _RAW_OPEN.match(code, start)
            if raw is None and (plain := _PLAIN_TAG.match(code, start)) is not None:
                yield Tag(start, plain.end(), plain.group(1))
                pos = plain.end()
                continue
            if raw is not None:
                name = raw.group(1).lower()
                gt = self._tag_end(self._events.next(raw.end()))
                if gt != _NONE:
                    close = self._raw_close[name].next(gt + 1)
                    if close == _NONE and closable[name]:
                        closable[name] = False
                        skip = _SKIPS[closable["script"], closable["style"]].match
                    if close != _NONE:
                        yield RawText(start, gt + 1, close, name)
                        pos = close
                        continue
            run_end = self._name_run_end(start + 1)
            name_end, gt = self._best_name_end(run_end, start + 2)
            if gt != _NONE:
                yield Tag(start, gt + 1, code[start + 1 : name_end])
                pos = gt + 1
                continue
            # No tag or script starting inside this name run can close (they share its
            # answer); only a comment opening inside it still can.
            comment = code.find("<!--", start + 1, run_end)
            pos = run_end if comment == -1 else comment

    def _name_run_end(self, pos: int) -> int:
        if not (self._run_from <= pos <= self._run_end):
            match = _NAME_RUN.match(self._code, pos)
            assert match is not None  # `*` always matches
            self._run_from, self._run_end = pos, match.end()
        return self._run_end

    def _best_name_end(self, run_end: int, lowest: int) -> tuple[int, int]:
        """The longest name (ending at or after `lowest`) whose tag closes, and its `>`."""
        if self._best_run != run_end:
            self._best_run, self._best_low = run_end, run_end + 1
            self._best_k = self._best_gt = _NONE
            self._last_quote = {'"': (_NONE, 0, _NONE), "'": (_NONE, 0, _NONE)}
            gt = self._tag_end(self._events.next(run_end))
            if gt != _NONE:
                self._best_k, self._best_gt = run_end, gt
            self._best_low = run_end
        if self._best_k != _NONE:
            return (self._best_k, self._best_gt) if self._best_k >= lowest else (_NONE, _NONE)
        # A name may end just before any quote in its run: try them right to left.
        while self._best_low > lowest:
            quote = self._previous_quote(lowest, self._best_low)
            if quote == _NONE:
                self._best_low = lowest
                break
            self._best_low = quote
            gt = self._tag_end(quote)
            if gt != _NONE:
                self._best_k, self._best_gt = quote, gt
                return quote, gt
        return _NONE, _NONE

    def _previous_quote(self, low: int, high: int) -> int:
        """The last quote character in [low, high); bounds only shrink within one run."""
        best = _NONE
        for char in "\"'":
            cached_high, cached_low, found = self._last_quote[char]
            # Still right when [low, high) lies inside the range searched and that
            # search's answer is below `high`: nothing of `char` sits between them.
            if not (high <= cached_high and low >= cached_low and found < high):
                found = self._code.rfind(char, low, high)
                self._last_quote[char] = (high, low, found)
            if found >= low:
                best = max(best, found)
        return best

    def _tag_end(self, event: int) -> int:
        """Where a RUN read from outside any quote, starting at `event`, reaches its `>`."""
        code, memo = self._code, self._memo
        path: list[int] = []
        result = _NONE
        while event != _NONE:
            known = memo.get(event)
            if known is not None:
                result = known
                break
            path.append(event)
            char = code[event]
            if char == ">":
                result = event
                break
            close = code.find(char, event + 1)
            if close == -1:
                break
            event = self._after_quote.next(close + 1)
        for seen in path:
            memo[seen] = result
        return result


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

_ATTR = re.compile(r"""(?P<name>[^\s"'>/=]+)(?:\s*=\s*(?P<value>"[^"]*"|'[^']*'|[^\s"'=<>`]+))?""")
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
    attrs = [m for m in _ATTR.finditer(tag, 1 + len(name), len(tag) - 1) if m.group("value")]
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
