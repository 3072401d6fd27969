"""The `react_vite` stack's project: its files, what it may import, where its page goes.

One place for the facts the agent (prompt, entry page), the tool workers (the build) and
the gateway (the export, the frames) share, so they cannot drift apart (docs/react.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

ProjectBuild = Literal["none", "react_vite"]

# The page the build makes of the project: the code every client is sent.
BUILT_PATH = "dist/index.html"
# Paths the model may write on this stack (project_paths.path_problem's suffixes).
SOURCE_SUFFIXES = (".html", ".css", ".ts", ".tsx", ".js", ".jsx", ".json")
# The packages a project may import (and any subpath of them, `react-dom/client`): each
# pinned in vendor/package.json, so the build and an exported project resolve the same
# bytes. Anything else is a build error naming the import.
IMPORTABLE = (
    "react",
    "react-dom",
    "lucide-react",
    "clsx",
    "tailwind-merge",
    "class-variance-authority",
    "@radix-ui/react-slot",
    "@radix-ui/react-dialog",
    "@radix-ui/react-tabs",
    "@radix-ui/react-accordion",
)
# What builds the project; an export's devDependencies, at the vendored versions.
TOOLCHAIN = ("vite", "tailwindcss", "postcss", "esbuild")


def build_of(stack: str) -> ProjectBuild:
    """How a stack's project becomes its page: only react_vite is built."""
    return "react_vite" if stack == "react_vite" else "none"


def pinned_versions(vendor_dir: Path) -> dict[str, str]:
    """Each importable and toolchain package → the version vendor/package.json pins (the
    top-level install; postcss comes with tailwindcss, so its installed version)."""
    pins: dict[str, str] = json.loads((vendor_dir / "package.json").read_text("utf-8"))[
        "dependencies"
    ]
    versions = {}
    for name in (*IMPORTABLE, *TOOLCHAIN):
        version = pins.get(name)
        if version is None:
            meta = vendor_dir / "node_modules" / name / "package.json"
            version = json.loads(meta.read_text("utf-8"))["version"]
        versions[name] = str(version)
    return versions
