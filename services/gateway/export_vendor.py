"""The export's offline option: the page's CDN runtimes bundled into the zip beside it.

Every URL on a CDN host we mirror (`vendor_urls.CDN_HOSTS`) that the catalog answers is
rewritten to `./vendor/…` (`../vendor/…` from a page in a folder) and its file written
there, with what it loads in turn: a stylesheet's fonts, an ES module's sibling chunks, a
Google Fonts stylesheet (generated, as the catalog generates it for every renderer) and
its font files. URLs we do not carry stay as they are. The zip then opens with no network
(docs/offline.md says how).
"""

from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass, field
from urllib.parse import quote

from services.common.markup import RawText, Tag, attribute_values, attributes, scan_markup
from services.common.vendor import Answer, VendorCatalog
from services.common.vendor_fonts import BadFontsRequest
from services.common.vendor_urls import CDN_HOSTS

VENDOR_DIR = "vendor"
_CDN_URL = re.compile(
    r"(?:https?:)?//(?:" + "|".join(re.escape(h) for h in CDN_HOSTS) + r")(?![\w.-])"
    r"""[^\s"'<>()`\\]*""",
    re.IGNORECASE,
)

# A reference into the bundle, as `_local` writes it (from the root or a folder).
_BUNDLED_REF = re.compile(rf"(?:\./|(?:\.\./)+){VENDOR_DIR}/")
_CORS_ATTRIBUTES = frozenset({"integrity", "crossorigin"})


def _local(rel: str) -> str:
    return f"./{quote(rel, safe='/@')}"


@dataclass
class VendorBundle:
    """The files an export adds under `vendor/`: name inside the zip -> bytes."""

    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return sum(len(data) for data in self.files.values())


def bundle_runtimes(page: str, catalog: VendorCatalog, up: str = "") -> tuple[str, VendorBundle]:
    """`page` with its mirrored CDN URLs pointing into `vendor/`, and the files to add.
    `vendor/` is at the zip's root: a page in a folder reaches it through `up` (`../`)."""
    root = up or "./"
    bundle = VendorBundle()
    answered: dict[str, str | None] = {}

    def replace(match: re.Match[str]) -> str:
        raw = match.group(0)
        if raw not in answered:
            # Attribute values may be escaped (`&amp;` between Google Fonts parameters).
            url = html.unescape(raw)
            url = url if url.startswith("http") else "https:" + url
            answered[raw] = _bundle(url, catalog, bundle)
        target = answered[raw]
        return raw if target is None else root + target

    return _drop_cors_attributes(_CDN_URL.sub(replace, page)), bundle


def _drop_cors_attributes(page: str) -> str:
    """`page` without `integrity` and `crossorigin` on the links and scripts it loads from
    the bundle. Linear in the page: its tags come from one scan (services.common.markup);
    the regexes this replaces took 20 s on 40 KB of spaces inside one tag (issue 35)."""
    # A page opened from disk has an opaque origin: a CORS-mode request for a sibling file
    # (`crossorigin`, which SRI needs) is refused, so the stylesheet would not load. The
    # bundled copy is the same file (docs/offline.md: Bootstrap's SRI hash is checked in
    # the tests), so the attributes only cost the offline page its styling.
    pieces: list[str] = []
    done = 0
    for token in scan_markup(page):
        if not (
            (isinstance(token, Tag) and token.name.lower() == "link")
            or (isinstance(token, RawText) and token.name == "script")
        ):
            continue
        found = attributes(page, token)
        values = attribute_values(found)
        if not any(_BUNDLED_REF.match(values.get(name, "")) for name in ("src", "href")):
            continue
        for attribute in found:
            if attribute.group("name").lower() in _CORS_ATTRIBUTES:
                pieces.append(page[done : attribute.start()].rstrip())  # with its space
                done = attribute.end()
    return "".join([*pieces, page[done:]]) if pieces else page


def _bundle(url: str, catalog: VendorCatalog, bundle: VendorBundle) -> str | None:
    # Generated answers live directly in vendor/, so `./<rel>` names a vendored file there.
    try:
        answer = catalog.answer(url, _local)
    except BadFontsRequest:
        return None  # the page's own malformed fonts URL: left as written
    if answer is None:
        return None
    if answer.rel is not None:
        name = answer.rel
    else:
        suffix = ".css" if answer.content_type.startswith("text/css") else ".js"
        name = f"_generated-{hashlib.sha256(url.encode()).hexdigest()[:16]}{suffix}"
    _add(bundle, name, answer, catalog)
    return f"{VENDOR_DIR}/{quote(name, safe='/@')}"


def _add(bundle: VendorBundle, name: str, answer: Answer, catalog: VendorCatalog) -> None:
    bundle.files[f"{VENDOR_DIR}/{name}"] = answer.body
    todo = list(catalog.dependencies(answer))
    expanded: set[int] = set()  # a unit's files all share one tuple: expand it once
    while todo:
        rel = todo.pop()
        path = f"{VENDOR_DIR}/{rel}"
        if path in bundle.files:
            continue
        found = catalog.read(rel)
        bundle.files[path] = found.body
        needs = catalog.dependencies(found)
        if id(needs) not in expanded:
            expanded.add(id(needs))
            todo.extend(needs)
