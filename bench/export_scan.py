"""Export transform time on adversarial pages, per MB, next to a normal page of the same size.

    .venv/bin/python bench/export_scan.py [--quick]

Every page goes through the real `build_export` (scan, reference collection, rewrite, Babel
pin, zip); its references are relative, so nothing is fetched. Time is the process's CPU
time (the transform runs in worker threads), best of a few runs. The baseline is a normal
page repeated to the same size: a generated Tailwind-style page with images, inline
`style` attributes and a `<style>` block full of `url()`s. The issue's target: every
adversarial page within 3x of the normal page's time per MB.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from services.gateway.export import ExportPolicy, build_export

NORMAL_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Acme - Pricing</title>
<script src="https://cdn.tailwindcss.com"></script>
<style>
  .hero { background: url("img/hero.jpg") center/cover no-repeat; }
  .pattern { background-image: url(img/dots.svg), url('img/fade.png'); }
  @import url("fonts.css");
  .card:hover { box-shadow: 0 4px 12px rgba(0,0,0,.15); }
</style></head>
<body class="bg-gray-50 text-gray-900 font-sans">
<header class="hero flex items-center justify-between px-8 py-6">
  <img src="img/logo.png" alt="Acme" class="h-8 w-auto">
  <nav class="space-x-6 text-sm"><a href="#features" class="hover:underline">Features</a>
  <a href="#pricing" class="hover:underline">Pricing</a><a href="/login">Sign in</a></nav>
</header>
<main class="max-w-5xl mx-auto px-6">
  <section id="pricing" class="grid grid-cols-3 gap-6 py-16">
    <div class="card rounded-xl bg-white p-6" style="background-image: url('img/card-1.png')">
      <h3 class="text-lg font-semibold">Starter</h3><p class="mt-2 text-3xl">$9</p>
      <ul class="mt-4 space-y-2 text-sm"><li>1 project</li><li>Email support</li></ul>
      <button class="mt-6 w-full rounded bg-indigo-600 py-2 text-white">Choose</button>
    </div>
    <div class="card rounded-xl bg-white p-6"><h3 class="text-lg font-semibold">Pro</h3>
      <img srcset="img/pro.png 1x, img/pro@2x.png 2x" alt="" class="mx-auto h-16">
      <p class="mt-2 text-3xl">$29</p><p class="text-gray-500">Everything in Starter, and more.</p>
    </div>
  </section>
  <section class="pattern py-12"><picture><source srcset="img/team.webp">
    <img src="img/team.jpg" alt="Our team" loading="lazy" class="rounded-2xl"></picture>
    <p class="mt-4 leading-relaxed">We build tools for teams that ship. &amp; we like it.</p>
  </section>
</main>
<footer class="border-t py-8 text-center text-xs text-gray-500">&copy; 2025 Acme Inc.</footer>
<script>document.querySelectorAll("a").forEach(a => a.addEventListener("click", () => {}));
</script></body></html>
"""


def repeat_to(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def around(prefix: str, unit: str, suffix: str) -> Callable[[int], str]:
    return lambda size: prefix + repeat_to(unit, size - len(prefix) - len(suffix)) + suffix


ADVERSARIAL: dict[str, Callable[[int], str]] = {
    'issue: <a x=" repeated': lambda size: repeat_to('<a x="', size),
    '<a x=" repeated, then ">': around("", '<a x="', '">'),
    "unclosed tags: <div class=x": lambda size: repeat_to("<div class=x ", size),
    "unclosed tags, a > at the end": around("", "<div class=x ", ">"),
    'unclosed attribute: <img src="': lambda size: repeat_to('<img src="', size),
    'unclosed <img src=", then ">': around("", '<img src="x ', '">'),
    'quotes in tag names: <a"': around("", '<a"', ">"),
    "url( run in <style>": around("<style>", "url(", "</style>"),
    "url( + spaces in <style>": around("<style>.a{background:url(", " ", "x)}</style>"),
    "url( + spaces in style=": around('<div style="background:url(', " ", 'x)">'),
    "deep nesting: <div>": lambda size: (
        repeat_to("<div>", size // 2) + repeat_to("</div>", size // 2)
    ),
    "deep nesting with attrs": around("", '<div class="a" style="color:red">', ""),
    "unclosed comments: <!--": around("", "<!--", ">"),
    "unclosed <script>": around("", "<script>", ""),
    "unclosed <style>": around("", "<style>", ""),
}


def cpu_per_mb(code: str, runs: int) -> float:
    policy = ExportPolicy(transform_timeout_s=600.0)
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        asyncio.run(build_export(code, policy=policy))
        best = min(best, time.process_time() - start)
    return best / (len(code) / (1024 * 1024))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 KB and 256 KB only")
    args = parser.parse_args()
    sizes = [64 * 1024, 256 * 1024] if args.quick else [64 * 1024, 256 * 1024, 1 << 20, 4 << 20]
    labels = [f"{s // 1024} KB" if s < 1 << 20 else f"{s >> 20} MB" for s in sizes]
    runs = {s: 5 if s <= 256 * 1024 else 3 if s <= 1 << 20 else 2 for s in sizes}

    normal = {s: cpu_per_mb(repeat_to(NORMAL_PAGE, s), runs[s]) for s in sizes}
    width = 32
    print("CPU ms per MB through build_export (ratio to the normal page of the same size)\n")
    print(f"{'page':<{width}}" + "".join(f"{label:>18}" for label in labels))
    print(
        f"{'normal page (baseline)':<{width}}"
        + "".join(f"{normal[s] * 1000:>11.1f}  1.00x" for s in sizes)
    )
    worst = 0.0
    for name, make in ADVERSARIAL.items():
        cells = []
        for size in sizes:
            code = make(size)
            ratio = cpu_per_mb(code, runs[size]) / normal[size]
            worst = max(worst, ratio)
            cells.append(f"{ratio * normal[size] * 1000:>11.1f} {ratio:>5.2f}x")
        print(f"{name:<{width}}" + "".join(cells))
    verdict = "met" if worst <= 3.0 else "NOT MET"
    print(f"\nworst adversarial / normal: {worst:.2f}x (target <= 3x: {verdict})")


if __name__ == "__main__":
    main()
