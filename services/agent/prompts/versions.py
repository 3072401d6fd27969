"""How an update shows the versions of the file in its history.

One version, the base, goes in full; each later one as the exact replacements that
turn its predecessor into it, as `edit_file` would apply them. Every request of a
lineage then starts with the same base, which the provider has cached since the first
update sent it, and the new part of a request is a few replacements instead of a whole
new file. When the replacements since the base outgrow a quarter of the file, the next
version is shown in full and becomes the base (one cache miss, then stable again).

The choice of base depends only on the versions up to it, so an update's rendering of
its history is the start of the next update's.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Edit = tuple[str, str]  # (old_text, new_text)

# The replacements since the base may add up to this share of the file's length.
REBASE_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class Shown:
    """How one version appears: in full, as edits of the one before, or elided."""

    kind: Literal["full", "edits", "elided"]
    edits: tuple[Edit, ...] = ()


def replacements(old: str, new: str) -> tuple[Edit, ...] | None:
    """Whole-line replacements that turn `old` into `new`, applied in order, each
    `old_text` occurring exactly once where it is applied; None when there are none
    that can be checked to reproduce `new` exactly."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    edits: list[Edit] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        # Widen by equal context lines until old_text is non-empty and unique.
        while True:
            old_text = "".join(a[i1:i2])
            if old_text and old.count(old_text) == 1:
                break
            if i1 == 0 and i2 == len(a):
                return None
            if i1 > 0:
                i1, j1 = i1 - 1, j1 - 1
            if i2 < len(a):
                i2, j2 = i2 + 1, j2 + 1
        edits.append((old_text, "".join(b[j1:j2])))
    working = old
    for old_text, new_text in edits:
        # Widened context can overlap a neighbouring change; the check catches it.
        if working.count(old_text) != 1:
            return None
        working = working.replace(old_text, new_text, 1)
    return tuple(edits) if working == new and edits else None


def plan(versions: Sequence[str]) -> list[Shown]:
    """How each of `versions` (oldest first) is shown: earlier bases elided, the last
    base in full, every version after it as its edits."""
    shown: list[Shown] = []
    since_base = 0
    for index, version in enumerate(versions):
        edits = replacements(versions[index - 1], version) if index else None
        size = sum(len(o) + len(n) for o, n in edits) if edits else 0
        if edits is not None and since_base + size <= REBASE_SHARE * len(version):
            since_base += size
            shown.append(Shown("edits", edits))
            continue
        if edits is None and index and version == versions[index - 1]:
            shown.append(Shown("edits"))  # the same file again: nothing to replace
            continue
        shown = [Shown("elided") if s.kind != "elided" else s for s in shown]
        since_base = 0
        shown.append(Shown("full"))
    return shown
