"""Reference sets: a directory of HTML pages and/or PNG screenshots, with a manifest.

`manifest.json` lists the items in order:

    {"name": "basic", "items": [
      {"id": "landing", "file": "landing.html", "kind": "landing",
       "viewport": {"width": 1280, "height": 800}}, ...]}

Without a manifest, every `*.html` and `*.png` in the directory is an item (id: the file
name's stem) at DEFAULT_VIEWPORT. A PNG with an HTML of the same stem beside it is not
a separate item: the HTML is the reference.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.eval.render import Viewport

DEFAULT_VIEWPORT = Viewport(1280, 800)
# Data, not code: the sets live beside `services/` at the top of the checkout (the
# editable install `make` does keeps this path valid).
BUILTIN_SETS = Path(__file__).resolve().parents[2] / "evalsets"
MAX_VIEWPORT_PX = 4096
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class SetError(Exception):
    """The set cannot be read; the message says which file and field, and why."""


@dataclass(frozen=True, slots=True)
class Reference:
    id: str
    path: Path
    viewport: Viewport
    kind: str = ""

    @property
    def is_html(self) -> bool:
        return self.path.suffix.lower() in (".html", ".htm")

    def digest(self) -> str:
        """Identifies the reference's content: a changed reference is scored again."""
        return hashlib.sha256(self.path.read_bytes()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class ReferenceSet:
    name: str
    root: Path
    items: tuple[Reference, ...]


def resolve(spec: str) -> Path:
    """A set directory, or the name of a set shipped with s2c (`basic`)."""
    path = Path(spec)
    if path.is_dir():
        return path
    builtin = BUILTIN_SETS / spec
    if "/" not in spec and builtin.is_dir():
        return builtin
    known = ", ".join(builtin_names()) or "none"
    raise SetError(f"{spec}: no such set directory (built-in sets: {known})")


def builtin_names() -> list[str]:
    if not BUILTIN_SETS.is_dir():
        return []
    return sorted(p.name for p in BUILTIN_SETS.iterdir() if p.is_dir())


def load_set(spec: str) -> ReferenceSet:
    root = resolve(spec)
    manifest = root / "manifest.json"
    if manifest.is_file():
        items = _from_manifest(root, manifest)
        name = _manifest_name(manifest, root)
    else:
        items = _from_directory(root)
        name = root.name
    if not items:
        raise SetError(f"{root}: the set has no items (no .html or .png files)")
    ids = [i.id for i in items]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise SetError(f"{root}: duplicate item id(s): {', '.join(duplicates)}")
    return ReferenceSet(name, root, tuple(items))


def _read_manifest(manifest: Path) -> dict[str, Any]:
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SetError(f"{manifest}: cannot read it: {exc}") from None
    except json.JSONDecodeError as exc:
        raise SetError(f"{manifest}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SetError(f"{manifest}: must be a JSON object with an `items` list")
    return data


def _manifest_name(manifest: Path, root: Path) -> str:
    name = _read_manifest(manifest).get("name", root.name)
    return name if isinstance(name, str) and name else root.name


def _from_manifest(root: Path, manifest: Path) -> list[Reference]:
    items = _read_manifest(manifest).get("items")
    if not isinstance(items, list):
        raise SetError(f"{manifest}: `items` must be a list")
    return [_item(root, manifest, i, entry) for i, entry in enumerate(items)]


def _item(root: Path, manifest: Path, index: int, entry: object) -> Reference:
    where = f"{manifest}: items[{index}]"
    if not isinstance(entry, dict):
        raise SetError(f"{where} must be an object")
    file = entry.get("file")
    if not isinstance(file, str) or not file:
        raise SetError(f"{where}.file must be a file name")
    path = (root / file).resolve()
    if not path.is_relative_to(root.resolve()):
        raise SetError(f"{where}.file {file!r} is outside the set directory")
    if path.suffix.lower() not in (".html", ".htm", ".png"):
        raise SetError(f"{where}.file {file!r} must be an .html or .png file")
    if not path.is_file():
        raise SetError(f"{where}.file {file!r} does not exist")
    item_id = entry.get("id", path.stem)
    if not isinstance(item_id, str) or not _ID.match(item_id):
        raise SetError(f"{where}.id must be 1-64 letters, digits, '.', '_' or '-'")
    kind = entry.get("kind", "")
    if not isinstance(kind, str):
        raise SetError(f"{where}.kind must be a string")
    return Reference(item_id, path, _viewport(where, entry.get("viewport")), kind)


def _viewport(where: str, value: object) -> Viewport:
    if value is None:
        return DEFAULT_VIEWPORT
    if not isinstance(value, dict):
        raise SetError(f"{where}.viewport must be an object {{width, height}}")
    sizes = []
    for key in ("width", "height"):
        n = value.get(key)
        if type(n) is not int or not 1 <= n <= MAX_VIEWPORT_PX:
            raise SetError(f"{where}.viewport.{key} must be an integer in 1..{MAX_VIEWPORT_PX}")
        sizes.append(n)
    return Viewport(sizes[0], sizes[1])


def _from_directory(root: Path) -> list[Reference]:
    files = sorted(p for p in root.iterdir() if p.suffix.lower() in (".html", ".htm", ".png"))
    html_stems = {p.stem for p in files if p.suffix.lower() != ".png"}
    return [
        Reference(p.stem, p.resolve(), DEFAULT_VIEWPORT)
        for p in files
        if p.suffix.lower() != ".png" or p.stem not in html_stems
    ]
