"""One row of `bench/load.py` per size, and the report under the table: the knee, the
bottleneck, the targets and the CPU cost per unit of work."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

TARGET_KNEE_GENERATIONS: Final = 100
TARGET_P99_MS: Final = 100.0
TARGET_RSS_PER_VARIANT_KB: Final = 1024.0
SATURATED_CPU: Final = 90.0


@dataclass
class Row:
    generations: int
    variants: int
    deltas_per_s: float
    events_per_s: float
    frames_per_s: float
    mb_per_s: float
    samples: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    cpu: dict[str, float]  # % of one core: gateway, agent, tools, client, other
    rss_mb: dict[str, float]
    rss_per_variant_kb: float
    live_variants: int
    completed: int
    errors: int
    client_lag_ms: float
    error_samples: list[str]


HEADER: Final = (
    f"{'N gen':>5} {'vars':>5} {'deltas/s':>9} {'events/s':>9} {'frames/s':>9} {'MB/s':>6} "
    f"{'samples':>8} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
    f"{'CPU% gw':>8} {'agent':>6} {'tools':>6} {'client':>6} {'other':>6} "
    f"{'RSS MB gw':>9} {'agent':>6} {'KB/var':>7} {'done':>5} {'err':>4} {'lag ms':>7}"
)


def format_row(row: Row) -> str:
    return (
        f"{row.generations:>5} {row.variants:>5} {row.deltas_per_s:>9.0f} "
        f"{row.events_per_s:>9.0f} "
        f"{row.frames_per_s:>9.0f} {row.mb_per_s:>6.2f} {row.samples:>8} "
        f"{row.p50_ms:>7.1f} {row.p99_ms:>7.1f} {row.max_ms:>7.0f} "
        f"{row.cpu['gateway']:>8.0f} {row.cpu['agent']:>6.0f} {row.cpu['tools']:>6.0f} "
        f"{row.cpu['client']:>6.0f} {row.cpu['other']:>6.0f} "
        f"{row.rss_mb['gateway']:>9.1f} {row.rss_mb['agent']:>6.1f} "
        f"{row.rss_per_variant_kb:>7.0f} {row.completed:>5} {row.errors:>4} "
        f"{row.client_lag_ms:>7.0f}"
    )


def knee(rows: Sequence[Row]) -> tuple[str, Row]:
    """Where p99 crosses the target (log-interpolated between sizes), and the row to blame."""
    for previous, row in zip([None, *rows], rows, strict=False):
        if not row.p99_ms > TARGET_P99_MS:
            continue
        if previous is None:
            return f"< {row.generations} generations (already over at the smallest size)", row
        low, high = math.log(previous.p99_ms), math.log(row.p99_ms)
        share = (math.log(TARGET_P99_MS) - low) / (high - low) if high > low else 0.0
        at = previous.generations * (row.generations / previous.generations) ** share
        return (
            f"≈ {at:.0f} generations ({4 * at:.0f} variants), between "
            f"{previous.generations} and {row.generations}",
            row,
        )
    return f"> {rows[-1].generations} generations (p99 never crossed 100 ms)", rows[-1]


def bottleneck(row: Row) -> str:
    servers = {k: v for k, v in row.cpu.items() if k not in ("client", "other")}
    name, busiest = max(servers.items(), key=lambda item: item[1])
    total = sum(row.cpu.values())
    parts = [f"{name} at {busiest:.0f}% of a core"]
    if busiest >= SATURATED_CPU:
        parts.append("saturated (one Python event loop)")
    else:
        parts.append("not saturated")
    if total >= 2 * SATURATED_CPU:
        parts.append(f"and the machine is full ({total:.0f}% of 200%, all processes)")
    if row.cpu["client"] >= SATURATED_CPU:
        parts.append("WARNING: the load client itself is saturated; latency is inflated")
    if row.cpu["other"] >= 20:
        parts.append(
            f"WARNING: other processes used {row.cpu['other']:.0f}% of a core meanwhile; "
            "latency and the knee are pessimistic"
        )
    return "; ".join(parts)


def report(rows: Sequence[Row]) -> None:
    print()
    print(HEADER)
    for row in rows:
        print(format_row(row))
    where, row = knee(rows)
    print()
    print(f"knee (p99 added latency > {TARGET_P99_MS:.0f} ms): {where}")
    print(f"bottleneck at N={row.generations}: {bottleneck(row)}")
    knee_ok = all(r.p99_ms <= TARGET_P99_MS for r in rows if r.generations <= 100) and any(
        r.generations >= TARGET_KNEE_GENERATIONS for r in rows
    )
    print(
        f"target knee ≥ {TARGET_KNEE_GENERATIONS} generations: "
        + ("met" if knee_ok else "NOT MET")
        + "  ("
        + ", ".join(f"N={r.generations}: p99/100 ms = {r.p99_ms / TARGET_P99_MS:.2f}" for r in rows)
        + ")"
    )
    rss_ok = all(r.rss_per_variant_kb <= TARGET_RSS_PER_VARIANT_KB for r in rows)
    print(
        "target RSS ≤ 1 MB per variant: "
        + ("met" if rss_ok else "NOT MET")
        + "  ("
        + ", ".join(f"N={r.generations}: {r.rss_per_variant_kb:.0f} KB" for r in rows)
        + ")"
    )
    print("CPU cost per unit of work (robust to a busy machine) and where a core would fill up:")
    for r in rows:
        agent_us = 1e4 * r.cpu["agent"] / r.deltas_per_s if r.deltas_per_s else math.nan
        gateway_us = 1e4 * r.cpu["gateway"] / r.events_per_s if r.events_per_s else math.nan
        print(
            f"  N={r.generations}: agent {agent_us:.0f} µs per model delta, gateway "
            f"{gateway_us:.0f} µs per event in ({r.events_per_s / max(r.frames_per_s, 1):.1f} "
            f"events per frame out); one core full at N ≈ "
            f"{r.generations * 100 / max(r.cpu['agent'], 1):.0f} (agent), "
            f"{r.generations * 100 / max(r.cpu['gateway'], 1):.0f} (gateway)"
        )
    for r in rows:
        if r.errors:
            print(f"N={r.generations}: {r.errors} error frames, e.g. {r.error_samples[:2]}")
