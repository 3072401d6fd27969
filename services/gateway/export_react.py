"""The export of a react_vite project: a Vite project that builds offline (docs/react.md).

The zip holds the model's sources at their paths, the page the suite built of them as
`dist/index.html` (what the previews showed, openable as it is), and the files that make
the sources a Vite project: `package.json` with every package at the version vendored
here, `vite.config.ts`, `tsconfig.json`, `tailwind.config.js` and `postcss.config.js`.
Those are ours whatever the model wrote under those names: the versions must be the
vendored ones and Tailwind's config is the one the build used (none of the model's code
is ever run). `npm install && npm run build` makes `dist/` again; with no network, link
the suite's `vendor/node_modules` as `node_modules` (README.md in the zip says so).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping

from services.common.react_project import BUILT_PATH, IMPORTABLE

_TOOLS = ("vite", "tailwindcss", "postcss")

VITE_CONFIG = """import { fileURLToPath, URL } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  // Relative URLs: dist/ works from any folder it is served from.
  base: "./",
  resolve: { alias: { "@": fileURLToPath(new URL("./src", import.meta.url)) } },
  esbuild: { jsx: "automatic" },
});
"""

TSCONFIG = {
    "compilerOptions": {
        "target": "ES2020",
        "lib": ["ES2020", "DOM", "DOM.Iterable"],
        "module": "ESNext",
        "moduleResolution": "bundler",
        "jsx": "react-jsx",
        "strict": True,
        "isolatedModules": True,
        "skipLibCheck": True,
        "noEmit": True,
        "allowImportingTsExtensions": True,
        "baseUrl": ".",
        "paths": {"@/*": ["./src/*"]},
    },
    "include": ["src"],
}

TAILWIND_CONFIG = """/** The build's own config: the default theme over the project's sources. */
export default {
  content: ["./index.html", "./src/**/*.{ts,tsx,js,jsx}"],
  theme: { extend: {} },
  plugins: [],
};
"""

POSTCSS_CONFIG = """export default { plugins: { tailwindcss: {} } };
"""

README = """# A React + TypeScript + Tailwind Vite project

`dist/index.html` is the page as built when exported: open it in a browser.

To build it yourself: `npm install`, then `npm run build` (`npm run dev` serves it live).
Every version in package.json is exact. With no network, link the node_modules of the
s2c-grpc checkout that exported it instead of `npm install`:
`ln -s /path/to/s2c-grpc/vendor/node_modules node_modules`.
"""


def package_json(versions: Mapping[str, str]) -> dict[str, object]:
    return {
        "name": "s2c-react-app",
        "private": True,
        "version": "0.0.0",
        "type": "module",
        "scripts": {"dev": "vite", "build": "vite build", "preview": "vite preview"},
        "dependencies": {name: versions[name] for name in IMPORTABLE},
        "devDependencies": {name: versions[name] for name in _TOOLS},
    }


def react_project_zip(files: Mapping[str, str], versions: Mapping[str, str]) -> bytes:
    """The zip of the project `files` (sources, and its built page at dist/index.html)."""
    ours = {
        "package.json": json.dumps(package_json(versions), indent=2) + "\n",
        "vite.config.ts": VITE_CONFIG,
        "tsconfig.json": json.dumps(TSCONFIG, indent=2) + "\n",
        "tailwind.config.js": TAILWIND_CONFIG,
        "postcss.config.js": POSTCSS_CONFIG,
        "README.md": README,
    }
    sources = {p: c for p, c in files.items() if p not in ours and p != BUILT_PATH}
    entries = {**sources, **ours}
    if BUILT_PATH in files:
        entries[BUILT_PATH] = files[BUILT_PATH]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(entries):
            archive.writestr(name, entries[name])
    return buffer.getvalue()
