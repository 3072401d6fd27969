"""Local copies of the runtimes generated pages load from CDNs, and the one map to them.

The stacks' pages load Tailwind, React, Babel, Vue, Bootstrap, Ionic, Font Awesome and
Google Fonts from CDNs (the system prompt's URLs, docs/offline.md). `vendor/package.json`
pins each of them on the npm registry; `make install` installs them into
`vendor/node_modules` and checks them against `vendor/manifest.json` (this module's
`check`). Every renderer of the suite then answers those CDN URLs from these files through
`VendorCatalog.answer`: the gateway's `/vendor/` route (the built-in UI's preview and the
export), the tool workers' Chromium and `s2c eval` (`vendor_route.py`).

Integrity is a chain: npm checks each package tarball against the lockfile; `check` hashes
every file we serve and compares each package's tree digest with the committed manifest,
writing the per-file hashes to an index beside the files; at run time the catalog checks
the index against the manifest when it loads and each file against the index the first
time it reads it. A file changed on disk is refused, never served.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
import mimetypes
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from threading import Lock
from typing import Any

from services.common import vendor_build, vendor_fonts, vendor_urls
from services.common.vendor_urls import (
    GoogleFontsRef,
    NpmRef,
    TailwindPlayRef,
    VendorFileRef,
)

log = logging.getLogger(__name__)

VENDOR_DIR_ENV = "S2C_VENDOR_DIR"
# A checkout's `vendor/` (services/common/vendor.py → the repository root).
DEFAULT_VENDOR_DIR = Path(__file__).resolve().parents[2] / "vendor"
MANIFEST_NAME = "manifest.json"
INDEX_NAME = ".s2c-vendor-index.json"
_FORMAT = 1
FONT_PACKAGE_PREFIXES = ("@fontsource/", "@fontsource-variable/")


@dataclass(frozen=True, slots=True)
class Package:
    """An npm package we vendor: which of its files are served, and which directories are
    one unit (an ES module entry that imports its siblings at run time, an icon set)."""

    name: str
    files: tuple[str, ...]  # fnmatch patterns relative to the package (`*` spans `/`)
    units: tuple[str, ...] = ()


# The packages the system prompt's stacks load (fonts come from vendor/package.json).
PACKAGES = (
    Package("tailwindcss-cdn", ("tailwindcss*.js", "3.*/tailwindcss*.js")),
    Package("react", ("umd/*.js",)),
    Package("react-dom", ("umd/*.js",)),
    Package("@babel/standalone", ("babel.js", "babel.min.js")),
    Package("vue", ("dist/*.js",)),
    Package("bootstrap", ("dist/css/*.css", "dist/js/*.js")),
    Package("@ionic/core", ("dist/ionic/*", "css/*.css"), units=("dist/ionic/",)),
    Package(
        "ionicons",
        (
            "dist/index.js",
            "dist/esm/*.js",
            "dist/ionicons/*",
            "dist/svg/*.svg",
            "dist/collection/components/icon/*.css",
        ),
        units=("dist/esm/", "dist/ionicons/"),
    ),
    Package("@fortawesome/fontawesome-free", ("css/*.css", "webfonts/*", "js/*.js")),
    # Not a page's runtime: the tool workers inject it into each scored render
    # (services/fidelity/accessibility.py, docs/accessibility.md).
    Package("axe-core", ("axe.js", "axe.min.js")),
)
_FONT_FILES = ("files/*.woff2", "metadata.json", "unicode.json")
_NEVER_SERVED = ("*.map", "*.d.ts", "*.md", "package.json")
_TAILWIND_PLUGIN_FILES = {
    frozenset(): "tailwindcss.js",
    frozenset({"forms"}): "tailwindcss-with-forms.js",
    frozenset({"typography"}): "tailwindcss-with-typography.js",
    frozenset({"aspect-ratio"}): "tailwindcss-with-aspect-ratio.js",
    frozenset({"container-queries"}): "tailwindcss-with-container-queries.js",
    frozenset({"forms", "typography", "aspect-ratio", "container-queries"}): (
        "tailwindcss-with-all-plugins.js"
    ),
}
_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".woff2": "font/woff2",
    ".woff": "font/woff",
    ".ttf": "font/ttf",
    ".eot": "application/vnd.ms-fontobject",
}


class VendorError(Exception):
    """The vendored files are missing, stale or changed; the message says what to run."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What a CDN URL is answered with. `rel` names the vendored file (None: generated)."""

    body: bytes
    content_type: str
    rel: str | None = None
    # A generated answer's vendored files (a stylesheet's fonts, a module's entry); a file's
    # are found by `VendorCatalog.dependencies` when an export asks.
    needs: tuple[str, ...] = ()


def package_of(rel: str, names: Iterable[str]) -> str | None:
    scoped = rel.split("/", 2)
    name = "/".join(scoped[:2]) if rel.startswith("@") else scoped[0]
    return name if name in names else None


def package_table(vendor_dir: Path) -> tuple[Package, ...]:
    """PACKAGES plus one per font package pinned in `vendor_dir/package.json`."""
    pins = _pins(vendor_dir)
    fonts = [Package(n, _FONT_FILES) for n in sorted(pins) if n.startswith(FONT_PACKAGE_PREFIXES)]
    return (*PACKAGES, *fonts)


def _pins(vendor_dir: Path) -> dict[str, str]:
    path = vendor_dir / "package.json"
    try:
        pins = json.loads(path.read_text(encoding="utf-8"))["dependencies"]
    except (OSError, ValueError, KeyError) as exc:
        raise VendorError(f"cannot read {path}: {exc}") from None
    return {str(k): str(v) for k, v in pins.items()}


def _selected(root: Path, package: Package) -> Iterable[tuple[str, Path]]:
    base = root / package.name
    for path in sorted(base.rglob("*")):
        inner = path.relative_to(base).as_posix()
        if not path.is_file() or any(fnmatch.fnmatch(inner, p) for p in _NEVER_SERVED):
            continue
        if any(fnmatch.fnmatch(inner, pattern) for pattern in package.files):
            yield f"{package.name}/{inner}", path


def _tree_digest(hashes: Mapping[str, str]) -> str:
    lines = "".join(f"{rel}\0{digest}\n" for rel, digest in sorted(hashes.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


def scan(vendor_dir: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """Hashes the installed files: (the manifest they make, the per-file index)."""
    root = vendor_dir / "node_modules"
    pins = _pins(vendor_dir)
    manifest: dict[str, Any] = {"format": _FORMAT, "packages": {}}
    index: dict[str, str] = {}
    for package in package_table(vendor_dir):
        try:
            meta = json.loads((root / package.name / "package.json").read_text("utf-8"))
        except (OSError, ValueError):
            raise VendorError(f"{package.name} is not installed under {root}") from None
        if pins.get(package.name) != meta.get("version"):
            raise VendorError(
                f"{package.name} {meta.get('version')} is installed, "
                f"{vendor_dir / 'package.json'} pins {pins.get(package.name)}"
            )
        hashes = {rel: _sha256(path) for rel, path in _selected(root, package)}
        if not hashes:
            raise VendorError(f"{package.name} has none of the files we serve")
        index |= hashes
        manifest["packages"][package.name] = {
            "version": meta["version"],
            "files": len(hashes),
            "bytes": sum((root / rel).stat().st_size for rel in hashes),
            "sha256": _tree_digest(hashes),
            "entries": _entries(meta),
        }
    try:
        manifest["build"] = vendor_build.scan_build(vendor_dir, manifest["packages"])
    except (vendor_build.BuildPackageError, OSError, ValueError) as exc:
        raise VendorError(f"the build packages (docs/react.md): {exc}") from None
    return manifest, index


def _entries(meta: Mapping[str, Any]) -> dict[str, str]:
    """The files a package's CDN URL without a path gets, per CDN, and its ES module."""
    entries: dict[str, str] = {}
    main = meta.get("main")
    for cdn in ("jsdelivr", "unpkg"):
        value = meta.get(cdn) or main
        if isinstance(value, str):
            entries[cdn] = value.removeprefix("./")
    exports = meta.get("exports")
    dot = exports.get(".") if isinstance(exports, dict) else None
    module = dot.get("import") if isinstance(dot, dict) else meta.get("module")
    if isinstance(module, str):
        entries["module"] = module.removeprefix("./")
    return entries


def _sha256(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def check(vendor_dir: Path, *, write_manifest: bool = False) -> str:
    """Verifies the installed files against the committed manifest and writes the index
    the run-time catalog reads; `write_manifest` (after changing a pin) records them
    instead. Returns a one-line summary; raises VendorError on any difference."""
    manifest, index = scan(vendor_dir)
    manifest_path = vendor_dir / MANIFEST_NAME
    if write_manifest:
        manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    else:
        try:
            committed = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise VendorError(f"cannot read {manifest_path}: {exc}") from None
        if committed != manifest:
            differ = sorted(
                name
                for part in ("packages", "build")
                for name in set(committed.get(part, {})) | set(manifest[part])
                if committed.get(part, {}).get(name) != manifest[part].get(name)
            )
            raise VendorError(
                f"the vendored files differ from {manifest_path} in {', '.join(differ)}: "
                "reinstall them (make install) or, after changing a pin on purpose, record "
                "them (python -m services.common.vendor --write-manifest)"
            )
    (vendor_dir / "node_modules" / INDEX_NAME).write_text(json.dumps(index, sort_keys=True))
    total = sum(p["bytes"] for p in manifest["packages"].values())
    return f"{len(manifest['packages'])} packages, {len(index)} files, {total} bytes verified"


def content_type(rel: str) -> str:
    suffix = Path(rel).suffix.lower()
    return _TYPES.get(suffix) or mimetypes.guess_type(rel)[0] or "application/octet-stream"


@dataclass
class VendorCatalog:
    """The vendored files of one install and the answers to CDN URLs made of them."""

    root: Path  # vendor/node_modules
    digest: str  # of the whole manifest: changes whenever any served byte does
    versions: Mapping[str, str]
    entries: Mapping[str, Mapping[str, str]]
    hashes: Mapping[str, str]
    units: Mapping[str, tuple[str, ...]]  # package -> its unit directories
    fonts: Mapping[str, vendor_fonts.FontFamily]  # lowercased family name ->
    _verified: dict[str, tuple[int, int]] = field(default_factory=dict)
    _units_cache: dict[str, tuple[str, ...]] = field(default_factory=dict)
    _lock: Lock = field(default_factory=Lock)

    @classmethod
    def load(cls, vendor_dir: Path) -> VendorCatalog:
        """Reads the manifest and the index `check` wrote; raises VendorError if either is
        missing or they disagree (the files themselves are checked as they are read)."""
        root = vendor_dir / "node_modules"
        try:
            manifest = json.loads((vendor_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
            index = json.loads((root / INDEX_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise VendorError(
                f"no verified vendor files in {vendor_dir} ({exc}); run make install"
            ) from None
        packages: dict[str, Any] = manifest.get("packages", {})
        by_package: dict[str | None, dict[str, str]] = {}
        for rel, digest in index.items():
            by_package.setdefault(package_of(rel, packages), {})[rel] = digest
        if None in by_package:  # a file no package of the manifest accounts for
            raise VendorError(f"the index lists files outside {vendor_dir / MANIFEST_NAME}")
        for name, entry in packages.items():
            if _tree_digest(by_package.get(name, {})) != entry["sha256"]:
                raise VendorError(f"{name} does not match {vendor_dir / MANIFEST_NAME}")
        units = {p.name: p.units for p in PACKAGES}
        fonts = {}
        for name in packages:
            if name.startswith(FONT_PACKAGE_PREFIXES):
                family = vendor_fonts.FontFamily.from_package(name, root / name)
                fonts[family.family.lower()] = family
        canonical = json.dumps(manifest, sort_keys=True).encode()
        return cls(
            root=root,
            digest=hashlib.sha256(canonical).hexdigest()[:16],
            versions={n: str(e["version"]) for n, e in packages.items()},
            entries={n: dict(e.get("entries", {})) for n, e in packages.items()},
            hashes=index,
            units=units,
            fonts=fonts,
        )

    def answer(self, url: str, file_url: Callable[[str], str]) -> Answer | None:
        """The local answer to `url`, or None when it is not something we vendor (the
        caller then treats it as any other request). `file_url(rel)` is how a generated
        answer (a Google Fonts stylesheet, a `+esm` module) names a vendored file.
        BadFontsRequest (a ValueError) when `url` is a malformed Google Fonts query: a
        400 for the caller to answer, as Google would."""
        ref = vendor_urls.parse(url)
        if isinstance(ref, GoogleFontsRef):
            return self._fonts(ref, file_url)
        if isinstance(ref, NpmRef) and ref.esm:
            return self._esm(ref, file_url)
        rel = self.resolve(ref) if ref is not None else None
        return self.read(rel) if rel is not None else None

    def resolve(self, ref: vendor_urls.CdnRef) -> str | None:
        """The vendored file a plain file reference names (not fonts, not `+esm`)."""
        if isinstance(ref, VendorFileRef):
            return ref.rel if ref.rel in self.hashes else None
        if isinstance(ref, TailwindPlayRef):
            name = _TAILWIND_PLUGIN_FILES.get(ref.plugins)
            if name is None or (ref.version is not None and not ref.version.startswith("3")):
                return None
            exact = f"tailwindcss-cdn/{ref.version}/{name}"
            # Another 3.x than the ones the package carries gets its newest (docs/offline.md).
            return exact if exact in self.hashes else f"tailwindcss-cdn/{name}"
        if isinstance(ref, NpmRef) and self._version_matches(ref):
            path = ref.path or self.entries[ref.package].get(ref.cdn, "")
            rel = f"{ref.package}/{path}"
            if rel in self.hashes:
                return rel
            # jsdelivr minifies on request: `x.min.js` is served when only `x.js` exists.
            for kind in (".js", ".css"):
                plain = rel.removesuffix(f".min{kind}") + kind
                if ref.cdn == "jsdelivr" and rel.endswith(f".min{kind}") and plain in self.hashes:
                    return plain
        return None

    def _version_matches(self, ref: NpmRef) -> bool:
        version = self.versions.get(ref.package)
        if version is None or ref.package.startswith(FONT_PACKAGE_PREFIXES):
            return False
        # Unversioned and `latest` get the pinned copy; so do a version or its prefix
        # (`@18`, `@18.0`). Any other version is not ours to answer.
        spec = ref.spec
        return spec in (None, "latest", version) or version.startswith(f"{spec}.")

    def read(self, rel: str) -> Answer:
        """A vendored file, checked against the index; VendorError if it changed."""
        path = self.root / rel
        data = path.read_bytes()
        stat = path.stat()
        key = (stat.st_size, stat.st_mtime_ns)
        with self._lock:
            verified = self._verified.get(rel) == key
        if not verified:
            if hashlib.sha256(data).hexdigest() != self.hashes.get(rel):
                log.error("vendored file changed on disk; refused", extra={"file": rel})
                raise VendorError(f"{rel} differs from its recorded hash; run make install")
            with self._lock:
                self._verified[rel] = key
        return Answer(data, content_type(rel), rel)

    def dependencies(self, answer: Answer) -> tuple[str, ...]:
        """The vendored files `answer` loads when used (an export bundles them too)."""
        if answer.rel is None:
            return answer.needs
        return self._needs(answer.rel, answer.body)

    def _needs(self, rel: str, data: bytes) -> tuple[str, ...]:
        package = package_of(rel, self.versions)
        if package is None:
            return ()
        for unit in self.units.get(package, ()):
            prefix = f"{package}/{unit}"
            if rel.startswith(prefix):
                return self._unit(prefix)
        if rel.endswith(".css"):
            return css_references(rel, data.decode("utf-8", "replace"), self.hashes)
        return ()

    def _unit(self, prefix: str) -> tuple[str, ...]:
        """Every file of a unit directory, computed once (one tuple per unit)."""
        with self._lock:
            found = self._units_cache.get(prefix)
            if found is None:
                found = tuple(r for r in self.hashes if r.startswith(prefix))
                self._units_cache[prefix] = found
        return found

    def _fonts(self, ref: GoogleFontsRef, file_url: Callable[[str], str]) -> Answer | None:
        request = vendor_fonts.parse_request(ref.path, ref.query)
        if request is None:
            return None
        sheet = vendor_fonts.stylesheet(request, self.fonts, file_url, self.hashes.__contains__)
        if sheet is None:
            return None
        css, needs = sheet
        return Answer(css.encode(), _TYPES[".css"], None, needs)

    def _esm(self, ref: NpmRef, file_url: Callable[[str], str]) -> Answer | None:
        if not self._version_matches(ref):
            return None
        module = self.entries[ref.package].get("module")
        rel = f"{ref.package}/{module}" if module else None
        if rel is None or rel not in self.hashes:
            return None
        # jsdelivr's `+esm` is a server-side bundle of the module entry; the entry itself,
        # with its relative imports, exports the same names. Its namespace doubles as the
        # default export, so `import x from '…/+esm'` links as it does there.
        target = json.dumps(file_url(rel))
        body = f"export * from {target};\nimport * as m from {target};\nexport default m;\n"
        return Answer(body.encode(), _TYPES[".js"], None, (rel, *self._needs(rel, b"")))


def css_references(rel: str, css: str, known: Mapping[str, str]) -> tuple[str, ...]:
    """The vendored files a stylesheet's relative `url()`s name (Font Awesome's fonts)."""
    base = rel.rsplit("/", 1)[0]
    found: dict[str, None] = {}
    for piece in css.split("url(")[1:]:
        target = piece.split(")", 1)[0].strip().strip("'\"").split("?")[0].split("#")[0]
        if not target or ":" in target or target.startswith("/"):
            continue
        resolved = os.path.normpath(f"{base}/{target}").replace(os.sep, "/")
        if resolved in known:
            found[resolved] = None
    return tuple(found)


def vendor_dir_from_env(env: Mapping[str, str]) -> Path:
    value = env.get(VENDOR_DIR_ENV, "").strip()
    return Path(value) if value else DEFAULT_VENDOR_DIR


def load_or_none(vendor_dir: Path) -> VendorCatalog | None:
    """The catalog, or None with a warning: a suite without the vendored files still runs,
    its renders loading CDN URLs from the network as before."""
    try:
        return VendorCatalog.load(vendor_dir)
    except VendorError as exc:
        log.warning("rendering without local CDN copies: %s", exc)
        return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    vendor_dir = vendor_dir_from_env(os.environ)
    try:
        print(check(vendor_dir, write_manifest="--write-manifest" in args))
    except VendorError as exc:
        print(f"vendor check failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
