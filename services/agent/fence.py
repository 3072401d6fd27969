"""The page in a text-mode answer: the first ```html fenced block, found while it streams.

A model that calls no tools (text mode, docs/models.md) is asked for the whole page
in one fenced block. `FenceScanner` splits its streamed text, delta by delta, into prose
and page pieces, so the page can stream into the live preview as a `create_file`'s
content does while the sentences around it stay chat text. Each delta is scanned once;
only a few characters that could still turn out to be a fence (a backtick or two, a
newline before them) wait for the next delta.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

FENCE = "```"
# Info strings that open the page's block; any other opens a block that stays prose.
_PAGE_INFOS = ("", "html", "htm", "xhtml")


class _State(Enum):
    PROSE = 0  # before the page's block: looking for a fence
    INFO = 1  # after an opening fence, reading its info string up to the newline
    PAGE = 2  # inside the page's block
    OTHER = 3  # inside a block that is not the page's (prose, to its closing fence)
    AFTER = 4  # the page's block closed: the rest is prose


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of the answer's text: page content or prose."""

    page: bool
    text: str


class FenceScanner:
    """Feeds on an answer's text deltas; yields its prose and page pieces in order."""

    __slots__ = ("_block_start", "_held", "_info", "_page_length", "_state")

    def __init__(self) -> None:
        self._state = _State.PROSE
        self._held = ""  # text that may still be (part of) a fence
        # The info string's pieces: joined once, at its newline (appending to a string
        # would copy it on every delta of an info string that never ends).
        self._info: list[str] = []
        self._page_length = 0
        # At a block's first line, where a closing fence needs no newline before it.
        self._block_start = False

    @property
    def found(self) -> bool:
        """Whether the page's block has opened."""
        return self._state in (_State.PAGE, _State.AFTER)

    @property
    def page_length(self) -> int:
        return self._page_length

    def feed(self, text: str) -> list[Piece]:
        out: list[Piece] = []
        text = self._held + text
        self._held = ""
        while text:
            text = self._step(text, out)
        return out

    def end(self) -> list[Piece]:
        """The answer ended: what was held back, as the state it is in reads it. An
        unclosed page block ends with the answer (a partial closing fence is dropped)."""
        held, self._held = self._held, ""
        if self._state is _State.PAGE:
            held = held.rstrip("`").removesuffix("\n")
            return self._page(held)
        if self._state is _State.INFO:
            info = "".join(self._info)
            return [] if _is_page(info) else [Piece(False, FENCE + info + held)]
        return [Piece(False, held)] if held else []

    def _step(self, text: str, out: list[Piece]) -> str:
        """Consumes a prefix of `text` (holding back a possible fence part); the rest."""
        state = self._state
        if state is _State.AFTER:
            out.append(Piece(False, text))
            return ""
        if state is _State.INFO:
            newline = text.find("\n")
            if newline < 0:
                self._info.append(text)
                return ""
            self._info.append(text[:newline])
            info, self._info = "".join(self._info), []
            if _is_page(info):
                self._state = _State.PAGE
            else:
                self._state = _State.OTHER
                out.append(Piece(False, FENCE + info + "\n"))
            self._block_start = True
            return text[newline + 1 :]
        if state is _State.PROSE:
            at = text.find(FENCE)
        else:
            # A closing fence starts a line: backticks inside a line of the page (a
            # script's string, say) are the page's.
            if self._block_start and text.startswith(FENCE):
                at = 0
            else:
                found = text.find("\n" + FENCE)
                at = found + 1 if found >= 0 else -1
        if at < 0:
            keep = _partial_fence(text, state is not _State.PROSE)
            body, self._held = text[: len(text) - keep], text[len(text) - keep :]
            if body:
                self._block_start = False
                self._emit(body, out)
            return ""
        if state is _State.PROSE:
            if at:
                out.append(Piece(False, text[:at]))
            self._state, self._info = _State.INFO, []
            return text[at + len(FENCE) :]
        # A closing fence: the newline before it belongs to the fence, not the block.
        body = text[:at]
        closing = body.endswith("\n")
        self._emit(body[:-1] if closing else body, out)
        if state is _State.PAGE:
            self._state = _State.AFTER
        else:
            out.append(Piece(False, ("\n" if closing else "") + FENCE))
            self._state = _State.PROSE
        return text[at + len(FENCE) :]

    def _emit(self, text: str, out: list[Piece]) -> None:
        if self._state is _State.PAGE:
            out.extend(self._page(text))
        elif text:
            out.append(Piece(False, text))

    def _page(self, text: str) -> list[Piece]:
        if not text:
            return []
        self._page_length += len(text)
        return [Piece(True, text)]


def _is_page(info: str) -> bool:
    """Whether a fence with this info string opens the page's block."""
    return info.strip().lower() in _PAGE_INFOS


def _partial_fence(text: str, in_block: bool) -> int:
    """How many characters at the end of `text` could begin a fence: up to two
    backticks, and in a block the newline before them (it belongs to a closing fence)."""
    ticks = len(text) - len(text.rstrip("`"))
    keep = min(ticks, len(FENCE) - 1)
    if ticks > keep:  # three or more would have been found as a fence
        return 0
    if in_block and len(text) > keep and text[len(text) - keep - 1] == "\n":
        keep += 1
    return keep
