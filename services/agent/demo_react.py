"""The demo model on the react_vite stack: a small React + TypeScript + Tailwind project,
written file by file as the stack's prompt asks (docs/react.md), so the build, its live
preview and the file tree show with no model key. Each option picks the demo theme's
colour; the header uses a lucide-react icon, the cards `clsx`."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

from services.agent.demo_pages import demo_title, theme_name
from services.agent.providers.scripted import Say, ScriptedTurn, Think, call_tool, chunk_text

_TEXT_CHUNK = 12

_INDEX_HTML = """<!doctype html>
<html lang="en">
  <head>
    <meta charset="UTF-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1.0" />
    <title>{title}</title>
  </head>
  <body>
    <div id="root"></div>
    <script type="module" src="/src/main.tsx"></script>
  </body>
</html>
"""

_INDEX_CSS = """@tailwind base;
@tailwind components;
@tailwind utilities;
"""

_MAIN = """import { createRoot } from "react-dom/client";
import App from "./App";
import "./index.css";

createRoot(document.getElementById("root")!).render(<App />);
"""

_HEADER = """import { Sparkles } from "lucide-react";

export default function Header({ title }: { title: string }) {
  return (
    <header className="flex items-center gap-3 bg-slate-900 px-8 py-6 text-white">
      <Sparkles className="h-7 w-7 text-THEME-400" aria-hidden="true" />
      <h1 data-demo-title className="text-2xl font-bold">{title}</h1>
    </header>
  );
}
"""

_FEATURES = """import { clsx } from "clsx";

const FEATURES = [
  { name: "Fast", text: "Rebuilt as every file streams in." },
  { name: "Typed", text: "TypeScript components, checked by the build." },
  { name: "Yours", text: "Export a Vite project that builds offline." },
];

export function Features() {
  return (
    <section className="grid gap-6 px-8 py-12 md:grid-cols-3">
      {FEATURES.map((feature, i) => (
        <article
          key={feature.name}
          className={clsx(
            "rounded-xl border p-6",
            i === 1 ? "border-THEME-600 bg-THEME-50" : "border-gray-200 bg-white",
          )}
        >
          <h2 className="text-lg font-semibold text-gray-900">{feature.name}</h2>
          <p className="mt-2 text-sm text-gray-600">{feature.text}</p>
        </article>
      ))}
    </section>
  );
}
"""

_FOOTER = """export const Footer = () => (
  <footer className="border-t border-gray-200 px-8 py-6 text-sm text-gray-500">
    Built by the demo model, file by file.
  </footer>
);
"""

_APP = """import Header from "./components/Header";
import { Features } from "./components/Features";
import { Footer } from "@/components/Footer";

export default function App() {
  return (
    <main className="min-h-screen bg-gray-50">
      <Header title={TITLE} />
      <Features />
      <Footer />
    </main>
  );
}
"""


def demo_react_files(prompt_text: str, variant_index: int) -> dict[str, str]:
    """The project, by path, in the order the demo writes it."""
    title = demo_title(prompt_text)
    theme = theme_name(variant_index)
    return {
        "index.html": _INDEX_HTML.format(title=html.escape(title)),
        "src/index.css": _INDEX_CSS,
        "src/main.tsx": _MAIN,
        "src/components/Header.tsx": _HEADER.replace("THEME", theme),
        "src/components/Features.tsx": _FEATURES.replace("THEME", theme),
        "src/components/Footer.tsx": _FOOTER,
        "src/App.tsx": _APP.replace("TITLE", json.dumps(title)),
    }


def demo_react_script(
    prompt_text: str, variant_index: int, chunk_size: int = 48
) -> Sequence[ScriptedTurn]:
    files = demo_react_files(prompt_text, variant_index)
    title = demo_title(prompt_text)
    calls = tuple(
        call_tool(f"demo-{variant_index}-file-{i}", "create_file", arguments, chunk_size)
        for i, arguments in enumerate({"path": p, "content": c} for p, c in files.items())
    )
    plan = (
        f"I'll write \u201c{title}\u201d as a Vite project: index.html, src/main.tsx, "
        "a header, feature cards and a footer as components, and App.tsx tying them."
    )
    summary = (
        f"Built \u201c{title}\u201d as a React + TypeScript + Tailwind project of "
        f"{len(files)} files."
    )
    return (
        ScriptedTurn((Think(chunk_text(plan, _TEXT_CHUNK)), *calls)),
        ScriptedTurn((Say(chunk_text(summary, _TEXT_CHUNK)),)),
    )
