"""Tables from a proto enum's values to the domain's names for them.

Our enums spell each value as its domain name under the enum's prefix
(`STACK_HTML_CSS` is `html_css`), so the table is derived from the descriptor instead of
written out once per enum and per service: a value added to the proto cannot be missed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

Name = TypeVar("Name", bound=str)


def enum_names(enum: EnumTypeWrapper, names: Iterable[Name], unspecified: Name) -> dict[int, Name]:
    """Each number of `enum` → the one of `names` it spells; its `*_UNSPECIFIED` (0), which
    a request leaves unset, → `unspecified`.

    Raises ValueError for a value that spells none of `names` (at import, so a proto value
    without a domain counterpart fails every test rather than one request).
    """
    known = {str(name): name for name in names}
    values = enum.DESCRIPTOR.values
    prefix = enum.DESCRIPTOR.values_by_number[0].name.removesuffix("UNSPECIFIED")
    table = {0: unspecified}
    for value in values:
        if value.number == 0:
            continue
        spelled = value.name.removeprefix(prefix).lower()
        if spelled not in known:
            raise ValueError(f"{value.name} spells none of {sorted(known)}")
        table[value.number] = known[spelled]
    return table


def enum_values(enum: EnumTypeWrapper) -> dict[str, str]:
    """The name each set value of `enum` spells (`STACK_HTML_CSS`: `html_css`) → the
    value's proto name, which a message's constructor takes as the value; in the proto's
    order. What a client (a CLI flag, a params frame) is given."""
    prefix = enum.DESCRIPTOR.values_by_number[0].name.removesuffix("UNSPECIFIED")
    return {
        value.name.removeprefix(prefix).lower(): value.name
        for value in enum.DESCRIPTOR.values
        if value.number != 0
    }
