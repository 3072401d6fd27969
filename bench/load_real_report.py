"""One row of `bench/load_real.py` per suite and size, and the report under the table:
the knees, their ratio, who saturates first, CPU per delta and the silent check."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from bench.load_report import SATURATED_CPU

TARGET_P99_MS: Final = 150.0


@dataclass
class Row:
    """One suite at one N: its endings, latency, traffic, CPU and memory."""

    tree: str
    generations: int
    completed: int
    refused: int
    failed: int
    silent: int
    stalled: int
    samples: int
    p50_ms: float
    p99_ms: float
    frames_per_s: float
    mb_per_s: float
    cpu: dict[str, float]  # % of one core
    late_pct: float
    deltas_per_s: float  # argument deltas the fakes wrote
    kb_per_variant: float
    client_lag_ms: float
    bad_frames: int
    notes: list[str]

    def past(self, p99_limit_ms: float = TARGET_P99_MS) -> bool:
        """Past the knee: too slow, or an admitted generation that did not complete."""
        return self.p99_ms > p99_limit_ms or bool(self.failed + self.silent + self.stalled)


PACE_MS: Final = 20.0  # between one stream's deltas: 50 deltas/s
TARGET_RATIO: Final = 3.0  # our knee over the baseline's
VARIANTS: Final = 4  # per generation: a create over the WebSocket protocol


def header(agents: int) -> str:
    return (
        f"{'suite':<8} {'N gen':>5} {'vars':>5} {'done':>5} {'refused':>7} {'failed':>6} "
        f"{'silent':>6} {'stalled':>7} {'p50 ms':>7} {'p99 ms':>7} {'frames/s':>8} "
        f"{'MB/s':>5} {'CPU% gw':>7} {'agents':>{4 * agents + 3}} {'tools':>5} {'fakes':>5} "
        f"{'client':>6} {'other':>5} {'late %':>6} {'KB/var':>6}"
    )


def format_row(row: Row, agents: int) -> str:
    each = "/".join(f"{v:.0f}" for k, v in row.cpu.items() if k.startswith("agent"))
    return (
        f"{row.tree:<8} {row.generations:>5} {VARIANTS * row.generations:>5} "
        f"{row.completed:>5} {row.refused:>7} {row.failed:>6} {row.silent:>6} "
        f"{row.stalled:>7} {row.p50_ms:>7.1f} {row.p99_ms:>7.1f} {row.frames_per_s:>8.0f} "
        f"{row.mb_per_s:>5.1f} {row.cpu['gateway']:>7.0f} {each:>{4 * agents + 3}} "
        f"{row.cpu['tools']:>5.0f} {row.cpu['fakes']:>5.0f} {row.cpu['client']:>6.0f} "
        f"{row.cpu['other']:>5.0f} {row.late_pct:>6.1f} {row.kb_per_variant:>6.0f}"
    )


def knee(rows: Sequence[Row], p99_limit_ms: float = TARGET_P99_MS) -> int | None:
    """The smallest N past the knee, None if no size was."""
    return next((r.generations for r in rows if r.past(p99_limit_ms)), None)


def capacity_limit_ms(rows: Sequence[Row]) -> float:
    """The capacity knee's p99 limit: twice the suite's own p99 at its smallest size (at
    least the target), so that a suite whose preview pacing alone is over 150 ms still
    shows where load starts to hurt it."""
    return max(TARGET_P99_MS, 2 * rows[0].p99_ms) if rows else TARGET_P99_MS


def knee_line(what: str, ours: Sequence[Row], base: Sequence[Row], limits: Sequence[float]) -> str:
    """Both suites' knees and their ratio; a knee at a suite's smallest or past its
    largest size is only a bound, and the ratio says so."""
    at_ours, at_base = knee(ours, limits[0]), knee(base, limits[1])
    ours_n = at_ours if at_ours is not None else ours[-1].generations
    base_n = at_base if at_base is not None else base[-1].generations
    text = f"{what}: ours N {'=' if at_ours is not None else '>'} {ours_n}, baseline N "
    text += f"{'=' if at_base is not None else '>'} {base_n}"
    if at_base is None:
        return text + "; the baseline never crossed (step to larger N)"
    low = at_ours is None or at_base == base[0].generations
    ratio = ours_n / base_n
    verdict = "met" if ratio >= TARGET_RATIO else ("NOT MET" if not low else "open")
    bound = "≥ " if low else ""
    return text + f"; ratio {bound}{ratio:.2f}x (target ≥ {TARGET_RATIO:.0f}x: {verdict})"


def saturation(row: Row, fakes: int, clients: int) -> str:
    """Who is at (or near) a full core at this size, and whether the bench's own
    processes were what ran out."""
    per_core = {
        "fakes": row.cpu["fakes"] / fakes,
        "client": row.cpu["client"] / clients,
    }
    servers = {k: v for k, v in row.cpu.items() if k not in ("fakes", "client", "other")}
    name, busiest = max(servers.items(), key=lambda item: item[1])
    total = sum(row.cpu.values())
    parts = [f"busiest server {name} {busiest:.0f}% of a core"]
    parts.append(f"per fake {per_core['fakes']:.0f}%, per client {per_core['client']:.0f}%")
    parts.append(f"machine {total:.0f}% of {100 * (os.cpu_count() or 1)}%")
    if max(per_core.values()) >= SATURATED_CPU:
        parts.append("WARNING: the bench's own fakes or client saturated first")
    elif row.late_pct > 1 or row.client_lag_ms > 100:
        parts.append(
            f"the fakes ran late ({row.late_pct:.1f}% of deltas) or the client lagged "
            f"({row.client_lag_ms:.0f} ms) for want of a core, not their own CPU: latency "
            "is pessimistic"
        )
    if total >= (os.cpu_count() or 1) * SATURATED_CPU:
        parts.append("the machine is full (the suite shares the cores with fakes and client)")
    elif busiest >= SATURATED_CPU:
        parts.append(f"{name} saturated first")
    if row.cpu["other"] >= 20:
        parts.append(f"other processes used {row.cpu['other']:.0f}% meanwhile")
    return "; ".join(parts)


def cost_line(row: Row) -> str:
    agents = {k: v for k, v in row.cpu.items() if k.startswith("agent")}
    per_delta = (
        {k: 1e4 * v / row.deltas_per_s for k, v in row.cpu.items()} if row.deltas_per_s else {}
    )
    if not per_delta:
        return "no deltas in the window"
    agent_us = sum(per_delta[k] for k in agents)
    # Deltas per second one core of agent CPU absorbs, times the agents, over 4 × 50/s.
    full_at = len(agents) * 1e6 / agent_us / (VARIANTS * 1000 / PACE_MS) if agent_us else math.inf
    return (
        f"{row.deltas_per_s:.0f} deltas/s; agents {agent_us:.0f} µs/delta, gateway "
        f"{per_delta['gateway']:.0f}, fakes {per_delta['fakes']:.1f}, client "
        f"{per_delta['client']:.1f}; agents full at N ≈ {full_at:.0f}"
    )


def report(
    rows: Sequence[Row], trees: Sequence[str], agents: int, fakes: int, clients: int
) -> None:
    """The table again, then the knees of `trees` (ours first), who saturates, the CPU
    per delta and the silent check."""
    print()
    print(header(agents))
    for row in sorted(rows, key=lambda r: (r.tree, r.generations)):
        print(format_row(row, agents))
    by_tree = {t: [r for r in rows if r.tree == t] for t in trees}
    for tree in trees:
        mine = by_tree[tree]
        at = knee(mine)
        shown = f"N = {at}" if at is not None else f"> {mine[-1].generations} (never crossed)"
        print(f"knee {tree} (p99 > {TARGET_P99_MS:.0f} ms or not completing): {shown}")
        blame = next((r for r in mine if r.generations == at), mine[-1])
        print(f"  at N={blame.generations}: {saturation(blame, fakes, clients)}")
        for r in mine:
            if r.notes or r.bad_frames:
                print(f"  N={r.generations}: {r.bad_frames} bad setCode frames; {r.notes}")
    if len(trees) == 2:
        ours, base = by_tree[trees[0]], by_tree[trees[1]]
        print(knee_line("the issue's knee", ours, base, [TARGET_P99_MS, TARGET_P99_MS]))
        limits = [capacity_limit_ms(ours), capacity_limit_ms(base)]
        what = f"capacity knee (p99 > {limits[0]:.0f} / {limits[1]:.0f} ms or not completing)"
        print(knee_line(what, ours, base, limits))
    print(
        "CPU per model delta the fakes wrote (robust to a busy machine; once the agents fall "
        "behind it undercounts their cost) and where one core per agent would fill:"
    )
    for r in sorted(rows, key=lambda r: (r.tree, r.generations)):
        print(f"  {r.tree} N={r.generations}: {cost_line(r)}")
    ours_rows = by_tree[trees[0]]
    limit = 2 * (knee(ours_rows) or ours_rows[-1].generations)
    sizes = [r.generations for r in ours_rows]
    silent = {r.generations: r.silent for r in ours_rows}
    covered = "covered" if max(sizes) >= limit else f"NOT covered: measure up to N={limit}"
    print(f"silent endings, {trees[0]}, per N: {silent}; twice the knee is N={limit}: {covered}")
