"""Tags and script/style elements of a page, found in one pass, in time linear in the page.

Two services read the tags of model- or client-written pages: the gateway's export rewrites
their image references (export_markup.py), the tool worker's preview inlines a project's
own stylesheets and scripts (preview_tool.py). Both use this one scanner; no backtracking
regular expression ever runs over a whole page.

It finds exactly what this grammar matched, scanning left to right and retrying one
character later wherever nothing matched (the pattern export used to run as a regex):

    <!--.*?-->                                      a comment, left alone
    <(script|style)\\b RUN > BODY  (BODY up to the first </script\\s*> or </style\\s*>)
    <[a-zA-Z][^\\s/>]* RUN >                         a tag (its name may give back characters)

    RUN = (?:"[^"]*"|'[^']*'|[^'">])*+

A backtracking engine retries every `<` of an unclosed page, and each retry reads to the
end: 56 KB of `<a x="` took seconds, 1 MB hours (and 15 KB of `<link rel=stylesheet `
held a tool worker's loop for 50 s, issue 35). Here each retry reuses what earlier ones
learnt, so every character is examined a bounded number of times:

- A RUN read from outside any quote at a given `"`, `'` or `>` always ends the same way,
  so that answer is remembered per character ("events"): a later tag reaching a known
  event stops there. Quoted stretches are skipped with `str.find`.
- A tag name's possible ends are the end of its run of name characters and the quotes in
  it; every `<` inside that run shares the same answer, worked out once per run.
- The next `-->`, `</script>` and `</style>` after a point, and the end of a name run, are
  remembered, so `<!--<!--…`, `<script><script>…` and `<a<a<a…` cost one search each.

A plain tag that cannot matter to either reader (not img, source, image or link, and no
"style" after its name) may be passed over unreported; every script and style element
comes out.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass

# Same character classes and flags as the grammar above, so non-ASCII letters that
# IGNORECASE folds (ſ, K, İ, ı) are treated identically. Which element `<ſcript` opens
# is the group that matched: `.lower()` leaves the long s as it is.
_RAW_OPEN = re.compile(r"<(?:(script)|style)\b", re.IGNORECASE)
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


# A closing tag inside an inlined body would end its element early.
_CLOSING = {name: re.compile(f"</(?={name})", re.IGNORECASE) for name in ("script", "style")}


def escaped_body(body: str, element: str) -> str:
    """`body` made safe to inline as a `<script>` or `<style>` element's text."""
    return _CLOSING[element].sub("<\\/", body)


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
                name = "script" if raw.group(1) else "style"
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


# One attribute of a tag the scan found, from after its name: a name, then maybe a value.
# Linear on a tag: its quotes pair up (RUN above), so a quoted value runs to its own quote.
ATTRIBUTE = re.compile(
    r"""(?P<name>[^\s"'>/=]+)(?:\s*=\s*(?P<value>"[^"]*"|'[^']*'|[^\s"'=<>`]+))?"""
)


def attributes(code: str, token: Tag | RawText) -> list[re.Match[str]]:
    """Every attribute of `token`'s (opening) tag in order: its `name`, and its `value` as
    written (quotes and character references included; None when it has none)."""
    gt = token.end if isinstance(token, Tag) else token.body_start
    return list(ATTRIBUTE.finditer(code, token.start + 1 + len(token.name), gt - 1))


def attribute_values(found: list[re.Match[str]]) -> dict[str, str]:
    """The attributes with a value, by lowercased name, unquoted and unescaped; the first
    of a repeated name wins, as in a browser."""
    values: dict[str, str] = {}
    for attribute in found:
        raw = attribute.group("value")
        name = attribute.group("name").lower()
        if raw is not None and name not in values:
            values[name] = html.unescape(raw[1:-1] if raw[0] in "\"'" else raw)
    return values
