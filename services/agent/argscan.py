"""Incremental scanner for streamed tool-call arguments.

A model streams a tool call's JSON arguments in small pieces. To show a live preview of
`create_file` we need the decoded `content` (and `path`) as they grow. Re-parsing the whole
buffer on every delta is quadratic; `ArgumentScanner` is a resumable JSON state machine that
looks at each input character a bounded number of times, however the text is chunked.

Fragments carry the offset at which their text starts in the key's decoded value, so the
engine can forward them as `code_delta {offset, text}` unchanged: the offset is the length
decoded so far (an append), and each occurrence of a key starts at offset 0 — so when a key
occurs again in the same object (json.loads keeps the last occurrence) the consumer
replaces what it had.

Merging fragments into fewer, larger events is the event log's job (eventlog.py).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Final, NamedTuple

# A string body runs until one of these; everything before is copied with one slice.
_STRING_STOP: Final = re.compile(r'["\\\x00-\x1f]')
_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")
_NUMBER_RUN: Final = re.compile(r"[-+0-9.eE]*")
# The number grammar json.loads accepts.
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_HEX4: Final = re.compile(r"[0-9A-Fa-f]{4}")
_HEX_RUN: Final = re.compile(r"[0-9A-Fa-f]*")
_INCOMPLETE: Final = -2
_INVALID: Final = -1
_SIMPLE_ESCAPES: Final = '"\\/bfnrt'
_SIMPLE_DECODED: Final = '"\\/\b\f\n\r\t'
# json.loads accepts NaN and Infinity too; each literal is known by its first character.
_LITERALS: Final = ("true", "false", "null", "NaN", "Infinity")
_LITERAL_STARTS: Final = "tfnNI"

# Parser states.
_VALUE: Final = 0  # a value is expected
_OBJECT_FIRST: Final = 1  # after '{': a key or '}'
_OBJECT_KEY: Final = 2  # after ',' in an object: a key
_COLON: Final = 3
_AFTER_VALUE: Final = 4  # ',' or the closing bracket
_ARRAY_FIRST: Final = 5  # after '[': a value or ']'
_STRING: Final = 6
_NUMBER_STATE: Final = 7
_LITERAL: Final = 8
_END: Final = 9  # the top-level value is complete: only whitespace may follow
_FAILED: Final = 10

# What the string being read is.
_KEY: Final = 0
_WATCHED: Final = 1
_IGNORED: Final = 2


class Fragment(NamedTuple):
    """Newly decoded text of a watched key.

    `offset` is where `text` starts in the key's decoded value (code points): the length
    decoded so far. Every occurrence of a watched key is reported from its opening quote, so
    its first fragment has offset 0 and may be empty; on a repeated key that means the value
    starts over.
    """

    key: str
    text: str
    offset: int


class ArgumentScanner:
    """Feeds on a tool call's JSON arguments chunk by chunk; yields watched string values.

    Only string values of top-level keys of the outer object are watched; the same names
    inside nested objects or arrays, and non-string values, are ignored. Invalid JSON sets
    `failed` (with `error`) and the scanner stops yielding; it never raises.
    """

    def __init__(self, keys: Collection[str] = ("path", "content")) -> None:
        self._keys = frozenset(keys)
        self._state = _VALUE
        self._stack: list[str] = []  # open containers, "{" or "["
        self._carry = ""  # an escape split by a chunk boundary, re-read with the next chunk
        self._consumed = 0  # absolute position of the current chunk's first character
        self.error: str | None = None
        # The string being read.
        self._string_kind = _IGNORED
        self._key_parts: list[str] = []
        self._key = ""  # the key whose value comes next
        self._watched_key = ""
        self._pending: list[str] = []  # decoded text of the watched key not yet reported
        self._pending_offset = 0
        self._restart = False
        # Numbers and literals spanning chunks.
        self._number_parts: list[str] = []
        self._literal = ""
        self._literal_pos = 0
        # Per watched key: decoded parts, decoded length, closing quote seen.
        self._values: dict[str, list[str]] = {}
        self._lengths: dict[str, int] = {}
        self._done: dict[str, bool] = {}
        self._out: list[Fragment] = []

    @property
    def failed(self) -> bool:
        return self._state == _FAILED

    @property
    def complete(self) -> bool:
        """The outer value has been closed (only whitespace may follow)."""
        return self._state == _END

    def value(self, key: str) -> str | None:
        """The decoded value of `key` so far; None until its string has started."""
        parts = self._values.get(key)
        if parts is None:
            return None
        if len(parts) > 1:
            parts[:] = ["".join(parts)]  # later calls cost nothing until it grows again
        return parts[0] if parts else ""

    def done(self, key: str) -> bool:
        """The closing quote of `key`'s (latest) string value has been read."""
        return self._done.get(key, False)

    def feed(self, chunk: str) -> list[Fragment]:
        """Consumes the next piece of the arguments; returns the fragments it decoded.

        At most one fragment per key occurrence per call, in document order.
        """
        if self._state == _FAILED or not chunk:
            return []
        if (
            self._state == _STRING
            and self._string_kind == _WATCHED
            and not self._carry
            and _STRING_STOP.search(chunk) is None
        ):
            # The common case while a watched value streams: plain text, nothing to decode.
            self._pending.append(chunk)
            self._consumed += len(chunk)
            self._out = []
            self._report()
            out, self._out = self._out, []
            return out
        data = self._carry + chunk if self._carry else chunk
        self._carry = ""
        self._out = []
        i, n = 0, len(data)
        while i < n:
            state = self._state
            if state == _STRING:
                i = self._read_string(data, i)
            elif state == _NUMBER_STATE:
                i = self._read_number(data, i)
            elif state == _LITERAL:
                i = self._read_literal(data, i)
            elif state == _FAILED:
                break
            else:
                i = _WHITESPACE.match(data, i).end()  # type: ignore[union-attr]
                if i < n:
                    self._structural(data, i)
                    i += 1 if self._state not in (_NUMBER_STATE, _LITERAL) else 0
        self._consumed += n - len(self._carry)
        if self._pending or self._restart:
            self._report()
        out, self._out = self._out, []
        return out

    # -- structure -------------------------------------------------------------------------

    def _structural(self, data: str, i: int) -> None:
        """Handles one non-whitespace character outside strings, numbers and literals."""
        c = data[i]
        state = self._state
        if state in (_VALUE, _ARRAY_FIRST):
            if state == _ARRAY_FIRST and c == "]":
                self._close_container("[", i)
            else:
                self._start_value(c, i)
        elif state == _AFTER_VALUE:
            top = self._stack[-1] if self._stack else ""
            if c == ",":
                self._state = _OBJECT_KEY if top == "{" else _VALUE
            elif c == "}" or c == "]":
                self._close_container("{" if c == "}" else "[", i)
            else:
                self._fail(i, "expected ',' or a closing bracket")
        elif state in (_OBJECT_FIRST, _OBJECT_KEY):
            if c == '"':
                self._key_parts = []
                self._string_kind = _KEY
                self._state = _STRING
            elif c == "}" and state == _OBJECT_FIRST:
                self._close_container("{", i)
            else:
                self._fail(i, "expected a key")
        elif state == _COLON:
            if c == ":":
                self._state = _VALUE
            else:
                self._fail(i, "expected ':'")
        else:  # _END
            self._fail(i, "extra data after the value")

    def _start_value(self, c: str, i: int) -> None:
        if c == '"':
            in_outer_object = len(self._stack) == 1 and self._stack[0] == "{"
            if in_outer_object and self._key in self._keys:
                self._start_watched(self._key)
            else:
                self._string_kind = _IGNORED
            self._state = _STRING
        elif c == "{" or c == "[":
            self._stack.append(c)
            self._state = _OBJECT_FIRST if c == "{" else _ARRAY_FIRST
        elif c == "-" or "0" <= c <= "9":
            self._number_parts = []
            self._state = _NUMBER_STATE
        elif (which := _LITERAL_STARTS.find(c)) >= 0:
            self._literal = _LITERALS[which]
            self._literal_pos = 0
            self._state = _LITERAL
        else:
            self._fail(i, "expected a value")

    def _close_container(self, kind: str, i: int) -> None:
        if not self._stack or self._stack[-1] != kind:
            self._fail(i, "mismatched closing bracket")
            return
        self._stack.pop()
        self._value_done()

    def _value_done(self) -> None:
        self._state = _AFTER_VALUE if self._stack else _END

    def _fail(self, i: int, why: str) -> None:
        if self._string_kind == _WATCHED and self._state == _STRING and self._pending:
            self._report()  # what was decoded before the error stays reported
        self._pending, self._restart = [], False
        self.error = f"invalid JSON at character {self._consumed + i}: {why}"
        self._state = _FAILED

    # -- watched values --------------------------------------------------------------------

    def _start_watched(self, key: str) -> None:
        self._string_kind = _WATCHED
        self._watched_key = key
        self._pending = []
        self._pending_offset = 0
        # Announced even while empty, so the consumer learns the key has started and, on a
        # repeated key (json.loads keeps the last), that the earlier value is replaced.
        self._restart = True
        self._values[key] = []
        self._lengths[key] = 0
        self._done[key] = False

    def _report(self) -> None:
        key = self._watched_key
        text = "".join(self._pending) if len(self._pending) != 1 else self._pending[0]
        self._pending = []
        self._restart = False
        self._out.append(Fragment(key, text, self._pending_offset))
        self._values[key].append(text)
        self._pending_offset = self._lengths[key] = self._pending_offset + len(text)

    # -- strings, numbers, literals ----------------------------------------------------------

    def _read_string(self, data: str, i: int) -> int:
        """Reads string text from `i`; returns where it stopped."""
        kind = self._string_kind
        out: list[str] | None
        out = self._pending if kind == _WATCHED else self._key_parts if kind == _KEY else None
        n = len(data)
        search = _STRING_STOP.search
        while True:
            m = search(data, i)
            if m is None:
                if out is not None and i < n:
                    out.append(data[i:] if i else data)
                return n
            j = m.start()
            if out is not None and j > i:
                out.append(data[i:j])
            c = data[j]
            if c == '"':
                self._end_string(kind)
                return j + 1
            if c != "\\":
                self._fail(j, "control character in a string")
                return n
            decoded, i = self._escape(data, j)
            if i < 0:
                return n  # incomplete (carried) or invalid (failed)
            if out is not None:
                out.append(decoded)

    def _escape(self, data: str, j: int) -> tuple[str, int]:
        """Decodes the escape at `j` like json.loads: (text, next index), or index -1 to stop."""
        n = len(data)
        if j + 1 >= n:
            return self._stop(data, j, _INCOMPLETE)
        k = _SIMPLE_ESCAPES.find(data[j + 1])
        if k >= 0:
            return _SIMPLE_DECODED[k], j + 2
        if data[j + 1] != "u":
            return self._stop(data, j, _INVALID)
        code = self._hex4(data, j + 2)
        if code < 0:
            return self._stop(data, j, code)
        if not 0xD800 <= code <= 0xDBFF:
            return chr(code), j + 6
        # A high surrogate pairs with an immediately following low-surrogate escape; anything
        # else leaves it a lone surrogate, as json.loads does. Decide only once that is visible.
        k = j + 6
        if k + 1 >= n and (k >= n or data[k] == "\\"):
            return self._stop(data, j, _INCOMPLETE)
        if data[k] != "\\" or data[k + 1] != "u":
            return chr(code), k
        low = self._hex4(data, k + 2)
        if low < 0:
            return self._stop(data, j, low)
        if 0xDC00 <= low <= 0xDFFF:
            return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), k + 6
        return chr(code), k

    def _stop(self, data: str, j: int, why: int) -> tuple[str, int]:
        if why == _INCOMPLETE:
            self._carry = data[j:]  # at most 11 characters: re-read with the next chunk
        else:
            self._fail(j, "invalid escape")
        return "", -1

    def _hex4(self, data: str, at: int) -> int:
        """The code unit spelled by four hex digits at `at`, or _INCOMPLETE or _INVALID."""
        if at + 4 <= len(data):
            return int(data[at : at + 4], 16) if _HEX4.match(data, at) else _INVALID
        # Fail early on a bad digit rather than waiting for the rest of the escape.
        return _INCOMPLETE if _HEX_RUN.match(data, at).end() == len(data) else _INVALID  # type: ignore[union-attr]

    def _end_string(self, kind: int) -> None:
        if kind == _KEY:
            self._key = "".join(self._key_parts)
            self._state = _COLON
            return
        if kind == _WATCHED:
            if self._pending or self._restart:
                self._report()
            self._done[self._watched_key] = True
        self._string_kind = _IGNORED
        self._value_done()

    def _read_number(self, data: str, i: int) -> int:
        j = _NUMBER_RUN.match(data, i).end()  # type: ignore[union-attr]
        self._number_parts.append(data[i:j])
        if j == len(data):
            return j  # may continue in the next chunk
        text = "".join(self._number_parts)
        self._number_parts = []
        if text == "-" and data[j] == "I":
            self._literal = "-Infinity"
            self._literal_pos = 1
            self._state = _LITERAL
        elif _NUMBER.fullmatch(text) is None:
            self._fail(j, "invalid number")
        else:
            self._value_done()
        return j

    def _read_literal(self, data: str, i: int) -> int:
        literal, pos, n = self._literal, self._literal_pos, len(data)
        while i < n and pos < len(literal):
            if data[i] != literal[pos]:
                self._fail(i, "invalid literal")
                return n
            i += 1
            pos += 1
        self._literal_pos = pos
        if pos == len(literal):
            self._value_done()
        return i
