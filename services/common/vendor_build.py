"""The vendored packages a react_vite build runs and bundles, and their check.

The runtimes a page loads from a CDN are hashed file by file for serving (vendor.py).
The build (esbuild, Tailwind, Vite and the packages a project may import, with everything
they depend on) is used whole by node instead, so it is checked per package: every
package of `vendor/package-lock.json` the runtimes do not already cover gets a digest
over all of its files (its own `node_modules` aside: those are packages of their own).
`vendor.check` compares them with the manifest's `build` section at install time, like
the runtimes; a changed or missing package fails the install, naming it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from pathlib import Path
from typing import Any


class BuildPackageError(Exception):
    """A package of the lockfile is missing or not the locked version."""


def scan_build(vendor_dir: Path, covered: Collection[str]) -> dict[str, Any]:
    """Each lockfile package outside `covered` (by install path) → version and digest."""
    lock = json.loads((vendor_dir / "package-lock.json").read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    for where, entry in sorted(lock.get("packages", {}).items()):
        if not where or where.removeprefix("node_modules/") in covered:
            continue
        root = vendor_dir / where
        if not root.is_dir():
            if entry.get("optional"):  # another platform's binary, never installed here
                continue
            raise BuildPackageError(f"{where} is not installed")
        meta = json.loads((root / "package.json").read_text(encoding="utf-8"))
        if meta.get("version") != entry.get("version"):
            raise BuildPackageError(
                f"{where} {meta.get('version')} is installed, the lockfile has "
                f"{entry.get('version')}"
            )
        out[where.removeprefix("node_modules/")] = {
            "version": entry["version"],
            "sha256": _tree(root),
        }
    return out


def _tree(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        inner = path.relative_to(root)
        if "node_modules" in inner.parts or not path.is_file():
            continue
        with path.open("rb") as file:
            digest.update(f"{inner.as_posix()}\0".encode())
            digest.update(hashlib.file_digest(file, "sha256").digest())
    return digest.hexdigest()
