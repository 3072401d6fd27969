"""react_vite builds: rebuild time per file commit, CPU per build, page bytes (docs/react.md).

```
.venv/bin/python bench/react_build.py [--commits N]   # about a minute on 2 loaded cores
```

The model's commits of tests/react/app.py are replayed through the production builder
(`services.tools.react_build.ReactBuilder`, real esbuild and Tailwind from vendor/): the
app written file by file, then `--commits` edits of one component (a price changes each
time). Each commit is one build, as a create_file/edit_file or a live rebuild asks for.
Rows: the builder as it runs (build processes kept between builds) and a baseline of one
fresh process per build (`builds_per_process=1`), which is how builds ran first. CPU is
the build processes' own (node and esbuild, from /proc), wall is what the tool call
waits. Commits that cannot build yet (the entry not written) cost no process and are
left out of the times.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from services.tools.react_build import BuildSettings, ReactBuilder
from tests.react.app import app_tsx, project

_TICKS = os.sysconf("SC_CLK_TCK")


def commits(edits: int) -> list[dict[str, str]]:
    """The project after each commit: written file by file, then `edits` price edits."""
    final = project()
    order = [
        "index.html",
        "src/index.css",
        "src/components/Header.tsx",
        "src/main.tsx",
        "src/components/Pricing.tsx",
        "src/components/Footer.tsx",
    ]
    states: list[dict[str, str]] = []
    files: dict[str, str] = {"src/App.tsx": app_tsx()}
    for path in order:
        files = {**files, path: final[path]}
        states.append(files)
    for shown in (("Pricing",), ("Pricing", "Footer")):
        files = {**files, "src/App.tsx": app_tsx(*shown)}
        states.append(files)
    for i in range(edits):
        pricing = final["src/components/Pricing.tsx"].replace("price: 29", f"price: {30 + i}")
        files = {**files, "src/components/Pricing.tsx": pricing}
        states.append(files)
    return states


def descendants_cpu_s() -> float:
    """CPU seconds so far of every live process under this one (node, esbuild)."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = int(fields[11]) + int(fields[12])  # utime + stime
    ours = {os.getpid()}
    grew = True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in ours} - ours
        grew = bool(found)
        ours |= found
    ours.discard(os.getpid())
    return sum(ticks[pid] for pid in ours) / _TICKS


def reaped_cpu_s() -> float:
    """CPU seconds of the children this process has reaped (a finished build process)."""
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return child.ru_utime + child.ru_stime


@dataclass
class Run:
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    page: str = ""


async def run(settings: BuildSettings, states: list[dict[str, str]]) -> Run:
    builder = ReactBuilder(settings)
    out = Run()
    try:
        for files in states:
            cpu_before = descendants_cpu_s() + reaped_cpu_s()
            started = time.perf_counter()
            built = await builder.build(files)
            wall = time.perf_counter() - started
            if built.html is None and built.errors[0].file == "index.html":
                continue  # answered without a process
            await asyncio.sleep(0.05)  # let a finished process be reaped and counted
            out.cpus.append(descendants_cpu_s() + reaped_cpu_s() - cpu_before)
            out.walls.append(wall)
            out.page = built.html or out.page
    finally:
        await builder.close()
    return out


def row(name: str, result: Run) -> str:
    walls = sorted(result.walls)
    p99 = walls[min(len(walls) - 1, round(0.99 * (len(walls) - 1)))]
    return (
        f"{name:<34} {len(walls):>6} {statistics.median(walls) * 1000:>9.0f} "
        f"{p99 * 1000:>8.0f} {statistics.mean(result.cpus) * 1000:>11.0f}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=30)
    args = parser.parse_args()
    states = commits(args.commits)
    settings = BuildSettings()
    warm = await run(settings, states)
    cold = await run(replace(settings, builds_per_process=1), states[: 8 + args.commits // 4])
    print(f"{'builder':<34} {'builds':>6} {'p50 ms':>9} {'p99 ms':>8} {'CPU ms/build':>11}")
    print(row("kept processes (production)", warm))
    print(row("one process per build (baseline)", cold))
    page = warm.page
    script = page.split('<script type="module">', 1)[1].split("</script>", 1)[0]
    style = page.split("<style>", 1)[1].split("</style>", 1)[0]
    print(
        f"\npage: {len(page.encode())} bytes (script {len(script.encode())}, "
        f"stylesheet {len(style.encode())}); load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
