"""A react_vite project in the pieces a model writes it in (tests and bench share it): a
header with a lucide-react icon, pricing cards and a footer, each in its own file."""

from __future__ import annotations

INDEX_HTML = """<!doctype html>
<html lang="en">
  <head>
    <meta charset="UTF-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1.0" />
    <title>Acme pricing</title>
  </head>
  <body>
    <div id="root"></div>
    <script type="module" src="/src/main.tsx"></script>
  </body>
</html>
"""

INDEX_CSS = """@tailwind base;
@tailwind components;
@tailwind utilities;

body { font-family: ui-sans-serif, system-ui, sans-serif; }
"""

MAIN_TSX = """import { createRoot } from "react-dom/client";
import App from "./App";
import "./index.css";

createRoot(document.getElementById("root")!).render(<App />);
"""

HEADER_TSX = """import { Rocket } from "lucide-react";

export default function Header() {
  return (
    <header className="flex items-center gap-3 bg-slate-900 px-8 py-6 text-white">
      <Rocket className="h-8 w-8 text-amber-400" aria-label="logo" />
      <h1 className="text-3xl font-bold">Acme Cloud</h1>
    </header>
  );
}
"""

PRICING_TSX = """import { clsx } from "clsx";

type Plan = { name: string; price: number; featured?: boolean };

const PLANS: Plan[] = [
  { name: "Starter", price: 9 },
  { name: "Team", price: 29, featured: true },
  { name: "Enterprise", price: 99 },
];

export function Pricing() {
  return (
    <section className="grid grid-cols-3 gap-6 px-8 py-12">
      {PLANS.map((plan) => (
        <div
          key={plan.name}
          className={clsx(
            "rounded-xl border p-6",
            plan.featured ? "border-indigo-600 bg-indigo-50" : "border-gray-200 bg-white",
          )}
        >
          <h2 className="text-xl font-semibold text-gray-900">{plan.name}</h2>
          <p className="mt-4 text-4xl font-bold text-indigo-600">${plan.price}</p>
          <p className="mt-2 text-sm text-gray-500">per month</p>
        </div>
      ))}
    </section>
  );
}
"""

FOOTER_TSX = """export const Footer = () => (
  <footer className="border-t border-gray-200 px-8 py-6 text-sm text-gray-600">
    Made with care by Acme, Inc.
  </footer>
);
"""


def app_tsx(*parts: str) -> str:
    """src/App.tsx showing the header and then `parts` ("Pricing", "Footer") in order."""
    imports = {
        "Pricing": 'import { Pricing } from "./components/Pricing";\n',
        "Footer": 'import { Footer } from "@/components/Footer";\n',
    }
    head = 'import Header from "./components/Header";\n' + "".join(imports[p] for p in parts)
    body = "".join(f"      <{p} />\n" for p in parts)
    return (
        f"{head}\nexport default function App() {{\n  return (\n"
        f'    <main className="min-h-screen bg-gray-50">\n      <Header />\n{body}'
        "    </main>\n  );\n}\n"
    )


def project(*parts: str) -> dict[str, str]:
    """The whole project with App showing `parts` (all three components by default)."""
    shown = parts or ("Pricing", "Footer")
    return {
        "index.html": INDEX_HTML,
        "src/index.css": INDEX_CSS,
        "src/main.tsx": MAIN_TSX,
        "src/components/Header.tsx": HEADER_TSX,
        "src/components/Pricing.tsx": PRICING_TSX,
        "src/components/Footer.tsx": FOOTER_TSX,
        "src/App.tsx": app_tsx(*shown),
    }
