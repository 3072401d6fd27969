"""Which vendored thing a CDN URL asks for: the URL grammar of each CDN the prompts name.

Pure parsing, no files: `parse(url)` turns a URL into a request the catalog (`vendor.py`)
answers, or None when the URL is on no CDN we mirror. Versions are matched by the catalog,
which knows what is installed.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

# Files the catalog generates or serves itself live under this host in a browser that
# routes requests in-process (tool workers, eval). `.invalid` never resolves (RFC 6761),
# so a request the router somehow missed fails at once instead of leaving the machine.
VENDOR_HOST = "s2c-vendor.invalid"

# Every CDN host whose URLs the catalog may answer: the built-in UI rewrites exactly these
# to the gateway's /vendor/ path (served by the same catalog).
CDN_HOSTS = (
    "cdn.tailwindcss.com",
    "cdn.jsdelivr.net",
    "unpkg.com",
    "registry.npmmirror.com",
    "cdnjs.cloudflare.com",
    "fonts.googleapis.com",
)

# cdnjs library names of the packages we vendor, with the npm package holding the same tree.
CDNJS_LIBRARIES = {"font-awesome": "@fortawesome/fontawesome-free"}

_NPM_NAME = r"(?:@[a-z0-9][\w.-]*/)?[a-z0-9][\w.-]*"
_NPM_PATH = re.compile(rf"^/(?P<name>{_NPM_NAME})(?:@(?P<spec>[^/]*))?(?P<rest>/.*)?$", re.I)
_MIRROR_PATH = re.compile(rf"^/(?P<name>{_NPM_NAME})/(?P<spec>[^/]+)/files(?P<rest>/.*)$", re.I)
_CDNJS_PATH = re.compile(r"^/ajax/libs/(?P<lib>[\w.-]+)/(?P<spec>[^/]+)(?P<rest>/.*)$")
_TAILWIND_PLUGINS = frozenset({"forms", "typography", "aspect-ratio", "container-queries"})


@dataclass(frozen=True, slots=True)
class VendorFileRef:
    """A file by its vendored path, `<package>/<path>` (the catalog's own URLs)."""

    rel: str


@dataclass(frozen=True, slots=True)
class NpmRef:
    """A file of an npm package, as jsdelivr, unpkg or npmmirror name it."""

    package: str
    spec: str | None  # the version asked for; None: unversioned (the CDN's latest)
    path: str  # inside the package, no leading slash; "" means the package's entry
    cdn: str  # "jsdelivr", "unpkg" or "npmmirror": each picks its default entry its own way
    esm: bool = False  # jsdelivr's `+esm`: the package's module entry as one ES module


@dataclass(frozen=True, slots=True)
class TailwindPlayRef:
    """The Tailwind Play CDN script, optionally of a version and with first-party plugins."""

    version: str | None
    plugins: frozenset[str]


@dataclass(frozen=True, slots=True)
class GoogleFontsRef:
    path: str  # "/css" or "/css2"
    query: str


CdnRef = VendorFileRef | NpmRef | TailwindPlayRef | GoogleFontsRef


def parse(url: str) -> CdnRef | None:
    """What `url` asks the catalog for, or None when it is on no CDN we mirror."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower().rstrip(".")
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https", ""):
        return None
    path = unquote(parts.path)
    if host == VENDOR_HOST:
        rel = _clean(path.removeprefix("/files/")) if path.startswith("/files/") else None
        return VendorFileRef(rel) if rel else None
    if host == "cdn.tailwindcss.com":
        return _tailwind(path, parts.query)
    if host == "fonts.googleapis.com":
        return GoogleFontsRef(path, parts.query) if path in ("/css", "/css2") else None
    if host == "cdn.jsdelivr.net" and path.startswith("/npm/"):
        return _npm(path[4:], "jsdelivr")
    if host == "unpkg.com":
        return _npm(path, "unpkg")
    if host == "registry.npmmirror.com":
        found = _MIRROR_PATH.match(path)
        rest = _clean(found["rest"]) if found else None
        return NpmRef(found["name"], found["spec"], rest, "npmmirror") if found and rest else None
    if host == "cdnjs.cloudflare.com":
        found = _CDNJS_PATH.match(path)
        package = CDNJS_LIBRARIES.get(found["lib"].lower()) if found else None
        rest = _clean(found["rest"]) if found else None
        if found is None or package is None or not rest:
            return None
        return NpmRef(package, found["spec"], rest, "cdnjs")
    return None


def _npm(path: str, cdn: str) -> NpmRef | None:
    found = _NPM_PATH.match(path)
    if found is None:
        return None
    rest = found["rest"] or ""
    esm = cdn == "jsdelivr" and (rest == "/+esm" or rest.endswith("/+esm"))
    if esm:
        rest = rest.removesuffix("+esm")
    inner = _clean(rest) if rest.strip("/") else ""
    if inner is None:
        return None
    spec = found["spec"] or None
    return NpmRef(found["name"].lower(), spec, inner, cdn, esm)


def _tailwind(path: str, query: str) -> TailwindPlayRef | None:
    version = path.strip("/") or None
    if version is not None and not re.fullmatch(r"\d+(?:\.\d+){0,2}", version):
        return None
    names: set[str] = set()
    for value in parse_qs(query).get("plugins", []):
        # `forms@0.5.3`: a plugin's own version is not something the play CDN pins us to.
        names.update(p.split("@", 1)[0].strip().lower() for p in value.split(",") if p.strip())
    names.discard("line-clamp")  # part of Tailwind itself since 3.3
    if not names <= _TAILWIND_PLUGINS:
        return None
    return TailwindPlayRef(version, frozenset(names))


def _clean(path: str) -> str | None:
    """`path` without its leading slash, or None when it climbs out (`..`) or is empty."""
    inner = path.lstrip("/")
    if not inner or inner.endswith("/"):
        return None
    normal = posixpath.normpath(inner)
    if normal.startswith("..") or normal != inner:
        return None
    return inner
