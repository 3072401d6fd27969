"""Google Fonts stylesheets answered from the @fontsource packages we vendor.

A page asks `fonts.googleapis.com/css2?family=Inter:wght@400;700&display=swap` (or the
older `/css?family=Roboto:400,700italic|Lato`); Google answers with `@font-face` rules,
one per style, weight and unicode subset, whose files live on fonts.gstatic.com. We answer
the same request with the same shape of rules whose files are the @fontsource copies, so a
page gets its font with no request leaving the machine. A variable family's rules all point
at its one variable file per subset and style, as Google's do.

Only a request whose every family we vendor is answered: one family we lack and the whole
request is left to the network, as it was (docs/offline.md says which families we ship).
A query we cannot read is refused whatever its families (`BadFontsRequest`, a 400, as
Google answers it): its values come from any page, so they are parsed strictly, never by
`float()` (`wght@inf` and `wght@1e999` used to raise OverflowError inside the browser).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs

# Subsets in the order Google lists them; `latin` last, as there.
_SUBSET_ORDER = (
    "cyrillic-ext",
    "cyrillic",
    "greek-ext",
    "greek",
    "vietnamese",
    "devanagari",
    "latin-ext",
    "latin",
)
_V1_VARIANT = re.compile(r"(?P<weight>\d{3})?(?P<italic>italic|i)?$")
_V1_NAMED = {"regular": (400, "normal"), "bold": (700, "normal"), "b": (700, "normal")}
_V1_NAMED |= {"italic": (400, "italic"), "bolditalic": (700, "italic"), "bi": (700, "italic")}
_V1_NAMED |= {"r": (400, "normal"), "i": (400, "italic")}
_DISPLAY = frozenset({"auto", "block", "swap", "fallback", "optional"})
# CSS font-weight's range (CSS Fonts 4); Google's wght axis lives inside it.
MIN_WEIGHT, MAX_WEIGHT = 1, 1000
# Faces (a family's style and weight) one request may ask for, all families together: a
# page needs a handful, and each costs a rule per subset (a 480 KB query asking 40,000
# took 3.7 s of a worker's CPU to answer with tens of megabytes).
MAX_FACES = 100
# Long enough for any value of a real request; what is shown of a bad one.
_SHOWN = 40


class BadFontsRequest(ValueError):
    """A Google Fonts query that is not one; the message says what is wrong with it."""


@dataclass(frozen=True, slots=True)
class FontFamily:
    """One vendored family: an @fontsource package directory and what its metadata says."""

    package: str  # e.g. "@fontsource-variable/inter"
    family: str  # Google's name, e.g. "Inter"
    file_id: str  # the prefix of its file names, e.g. "inter"
    weights: tuple[int, ...]
    weight_range: tuple[int, int] | None  # a variable family's wght axis
    subsets: tuple[str, ...]
    unicode_ranges: Mapping[str, str]

    @classmethod
    def from_package(cls, package: str, directory: Path) -> FontFamily:
        meta = json.loads((directory / "metadata.json").read_text(encoding="utf-8"))
        ranges = json.loads((directory / "unicode.json").read_text(encoding="utf-8"))
        variable = meta.get("variable") or {}
        wght = variable.get("wght") if isinstance(variable, dict) else None
        weight_range = (int(wght["min"]), int(wght["max"])) if wght else None
        return cls(
            package=package,
            family=str(meta["family"]),
            file_id=str(meta["id"]),
            weights=tuple(int(w) for w in meta["weights"]),
            weight_range=weight_range,
            subsets=tuple(s for s in _SUBSET_ORDER if s in ranges),
            unicode_ranges={str(k): str(v) for k, v in ranges.items()},
        )

    def file_name(self, subset: str, weight: int, style: str) -> str:
        middle = "wght" if self.weight_range else str(weight)
        return f"{self.file_id}-{subset}-{middle}-{style}.woff2"


@dataclass(frozen=True, slots=True)
class Face:
    style: str  # "normal" or "italic"
    weight: int | tuple[int, int]  # one weight, or a range asked as `wght@100..900`


@dataclass(frozen=True, slots=True)
class FamilyRequest:
    name: str
    faces: tuple[Face, ...]


@dataclass(frozen=True, slots=True)
class FontsRequest:
    families: tuple[FamilyRequest, ...]
    display: str | None


def parse_request(path: str, query: str) -> FontsRequest | None:
    """The families and faces a `/css` or `/css2` query asks for; None if it names none
    (or the path is neither). BadFontsRequest when a family's spec is malformed."""
    params = parse_qs(query, keep_blank_values=False)
    asked = params.get("display", [])
    display = asked[-1] if asked and asked[-1] in _DISPLAY else None
    raw = params.get("family") or []
    if path == "/css2":
        families = [_parse_css2_family(spec) for spec in raw]
    elif path == "/css":
        families = [_parse_css1_family(s) for spec in raw for s in spec.split("|") if s]
    else:
        return None
    faces = sum(len(family.faces) for family in families)
    if faces > MAX_FACES:
        raise BadFontsRequest(f"{faces} faces asked for; at most {MAX_FACES} in one request")
    return FontsRequest(tuple(families), display) if families else None


def _parse_css2_family(spec: str) -> FamilyRequest:
    name, _, axes_spec = spec.partition(":")
    if not axes_spec:
        return FamilyRequest(name.strip(), (Face("normal", 400),))
    axes_text, at, tuples_text = axes_spec.partition("@")
    if not at:
        raise BadFontsRequest(f"family {_shown(spec)}: axes without values (`:wght@400`)")
    axes = axes_text.split(",")
    faces: list[Face] = []
    for item in tuples_text.split(";"):
        values = item.split(",")
        if len(values) != len(axes):
            raise BadFontsRequest(
                f"family {_shown(spec)}: {_shown(item)} has {len(values)} values for "
                f"{len(axes)} axes ({_shown(axes_text)})"
            )
        named = dict(zip(axes, values, strict=True))
        ital = named.get("ital", "0")
        if ital not in ("0", "1"):
            raise BadFontsRequest(f"family {_shown(spec)}: ital is 0 or 1, not {_shown(ital)}")
        low, dots, high = named.get("wght", "400").partition("..")
        weight: int | tuple[int, int] = (_weight(low), _weight(high)) if dots else _weight(low)
        if isinstance(weight, tuple) and weight[0] > weight[1]:
            raise BadFontsRequest(f"family {_shown(spec)}: the weight range {low}..{high} is empty")
        faces.append(Face("italic" if ital == "1" else "normal", weight))
    return FamilyRequest(name.strip(), tuple(faces))


def _weight(text: str) -> int:
    """A weight as written in a query: a whole number of at most four ASCII digits, in
    CSS's range (digits checked before any conversion: no float, no 400-digit int)."""
    if not (0 < len(text) <= 4 and text.isascii() and text.isdecimal()):
        raise BadFontsRequest(
            f"font weight {_shown(text)} is not a whole number from {MIN_WEIGHT} to {MAX_WEIGHT}"
        )
    weight = int(text)
    if not MIN_WEIGHT <= weight <= MAX_WEIGHT:
        raise BadFontsRequest(
            f"font weight {weight} is out of range: a whole number from {MIN_WEIGHT} to "
            f"{MAX_WEIGHT}"
        )
    return weight


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")


def _parse_css1_family(spec: str) -> FamilyRequest:
    name, _, variants_text = spec.partition(":")
    faces: list[Face] = []
    for variant in (v.strip().lower() for v in variants_text.split(",") if v.strip()):
        if variant in _V1_NAMED:
            weight, style = _V1_NAMED[variant]
            faces.append(Face(style, weight))
            continue
        found = _V1_VARIANT.match(variant)
        if found is None:
            raise BadFontsRequest(f"family {_shown(spec)}: unknown variant {_shown(variant)}")
        weight = _weight(found["weight"]) if found["weight"] else 400
        faces.append(Face("italic" if found["italic"] else "normal", weight))
    return FamilyRequest(name.strip(), tuple(faces) or (Face("normal", 400),))


def stylesheet(
    request: FontsRequest,
    families: Mapping[str, FontFamily],
    file_url: Callable[[str], str],
    exists: Callable[[str], bool],
) -> tuple[str, tuple[str, ...]] | None:
    """The CSS for `request` and the font files it names, each by
    `file_url("<package>/files/<name>")`; None when a family is not vendored (`families`
    is keyed by the lowercased name)."""
    rules: list[str] = []
    files: dict[str, None] = {}
    for wanted in request.families:
        family = families.get(wanted.name.lower())
        if family is None:
            return None
        for rel, rule in _family_rules(family, wanted.faces, request.display, file_url, exists):
            files[rel] = None
            rules.append(rule)
    return "\n".join(rules), tuple(files)


def _family_rules(
    family: FontFamily,
    faces: Iterable[Face],
    display: str | None,
    file_url: Callable[[str], str],
    exists: Callable[[str], bool],
) -> Iterable[tuple[str, str]]:
    for face in dict.fromkeys(faces):
        weight_css = _weight_css(family, face.weight)
        if weight_css is None:
            continue  # a weight the family does not have: Google leaves it out too
        file_weight = face.weight[0] if isinstance(face.weight, tuple) else face.weight
        for subset in family.subsets:
            rel = f"{family.package}/files/{family.file_name(subset, file_weight, face.style)}"
            if not exists(rel):
                continue
            lines = [
                f"/* {subset} */",
                "@font-face {",
                f"  font-family: '{family.family}';",
                f"  font-style: {face.style};",
                f"  font-weight: {weight_css};",
            ]
            if display is not None:
                lines.append(f"  font-display: {display};")
            lines += [
                f"  src: url({file_url(rel)}) format('woff2');",
                f"  unicode-range: {family.unicode_ranges[subset]};",
                "}",
            ]
            yield rel, "\n".join(lines)


def _weight_css(family: FontFamily, weight: int | tuple[int, int]) -> str | None:
    if family.weight_range is not None:
        low, high = family.weight_range
        if isinstance(weight, tuple):
            start, end = max(low, weight[0]), min(high, weight[1])
            return f"{start} {end}" if start <= end else None
        return str(weight) if low <= weight <= high else None
    if isinstance(weight, tuple):
        return None  # a static family has no range
    return str(weight) if weight in family.weights else None
