"""Text that every wire format accepts."""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
_REPLACEMENT = "\ufffd"


def clean_text(text: str) -> str:
    """Lone surrogates (JSON allows them; protobuf and UTF-8 do not) become U+FFFD.

    Offsets stay the same: one code point for one.
    """
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_REPLACEMENT, text)


def clean_json(value: Any) -> Any:
    """`clean_text` over every string (keys too) of a freshly parsed JSON value.

    Iterative and in place: parsed JSON may be nested deeper than Python's recursion
    limit allows a recursive walk.
    """
    if isinstance(value, str):
        return clean_text(value)
    stack: list[Any] = [value]
    while stack:
        container = stack.pop()
        if isinstance(container, list):
            for i, item in enumerate(container):
                if isinstance(item, str):
                    container[i] = clean_text(item)
                elif isinstance(item, list | dict):
                    stack.append(item)
        elif isinstance(container, dict):
            for key in list(container):
                item = container[key]
                if isinstance(item, str):
                    item = clean_text(item)
                elif isinstance(item, list | dict):
                    stack.append(item)
                clean = clean_text(key)
                if clean != key:
                    del container[key]
                container[clean] = item
    return value
