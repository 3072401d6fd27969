"""Live-preview bench: streamed `create_file` arguments, from model deltas to browser frames.

Run alone: `.venv/bin/python bench/preview.py` (under a minute on two idle cores), or
`--quick` (seconds).

1. CPU: our incremental `ArgumentScanner` against a baseline that re-scans the whole
   buffer on every delta as upstream does, on the same 8-character deltas.
2. gRPC: the bytes of the `code_delta` events the agent's event log commits for the
   preview (services/agent/eventlog.py: a stream's first delta at once, the rest merged
   until the generation's next tick), against the content size.
3. Browser: timed streams replayed on a simulated clock through the production chain
   (bench/chain.py: scanner, event log, the gateway's relay, frame builder and
   `SetCodePolicy`), against upstream's rule (the whole file on every 40 new characters):
   setCode bytes, preview lag and the worst one-second bandwidth.
4. Freshness: delta-to-visible p50 / p99 (from a model delta to the first frame showing
   what it decoded) and setCode bytes against upstream's rule computed on the same run,
   for a 30 KB page at 50 deltas/s and a fast 400 KB page; the same before this policy
   (225 ms interval, 40 ms code tick) and for gRPC clients reading the `code_delta`s:
   their payload (code text against the content: append-only, nothing resent) and their
   wire bytes (protobuf and framing).
5. The code tick's frontier: the agent's code tick against setCode freshness and bytes,
   gRPC freshness and wire bytes (also as they were with every code_delta carrying its
   generation and tool-call ids), for the 30 KB page at 50 deltas/s.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: find bench/

from bench.chain import VARIANT, delta_lags, payload_bytes, replay_stream, wire_bytes
from bench.chain import Replay as Chain
from bench.rescan import UPSTREAM_STEP, run_rescan_baseline, run_rescan_regex
from services.agent.argscan import ArgumentScanner
from services.agent.eventlog import DEFAULT_CODE_TICK_S, DEFAULT_TICK_S
from services.gateway.frames import encode, frame
from services.gateway.preview_policy import PreviewPolicyConfig

KB: Final = 1024
DELTA: Final = 8  # characters per streamed delta
FRONTIER_TICKS_S: Final = (0.01, 0.02, 0.04, 0.06, 0.1, 0.2, 0.5, 1.0)


# -- inputs ------------------------------------------------------------------------------


def make_page(size: int, seed: int = 7) -> str:
    """A Tailwind-style landing page of `size` characters, like a model writes."""
    rng = random.Random(seed)
    vocabulary = (
        "build ship fast modern design team cloud secure data launch grow simple pricing "
        "customers analytics workflow café naïve résumé — “quoted” 🚀 ✨ it's"
    )
    words = vocabulary.split()
    colors = ("indigo", "slate", "emerald", "rose", "amber", "sky")

    def text(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n)).capitalize()

    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n  <meta charset="UTF-8">\n'
        '  <meta name="viewport" content="width=device-width, initial-scale=1.0">\n'
        "  <title>Launchpad</title>\n"
        '  <script src="https://cdn.tailwindcss.com"></script>\n</head>\n'
        '<body class="bg-white text-slate-900 antialiased">\n'
    )
    tail = (
        "  <script>\n    document.querySelectorAll('a[href^=\"#\"]').forEach((a) => {\n"
        "      a.addEventListener('click', (e) => { e.preventDefault(); });\n"
        "    });\n    const re = /\\d+\\s*/g;\n  </script>\n</body>\n</html>\n"
    )
    parts: list[str] = []
    total = len(head) + len(tail)
    while total < size:
        c = rng.choice(colors)
        cards = "".join(
            f'      <div class="rounded-2xl border border-{c}-100 p-6 shadow-sm">\n'
            f'        <img src="https://picsum.photos/seed/{rng.randint(1, 999)}/400/300" '
            f'alt="{text(3)}" class="mb-4 rounded-xl">\n'
            f'        <h3 class="text-lg font-semibold text-{c}-700">{text(3)}</h3>\n'
            f'        <p class="mt-2 text-sm text-slate-600">{text(rng.randint(12, 30))}</p>\n'
            "      </div>\n"
            for _ in range(rng.randint(2, 4))
        )
        section = (
            f'  <section id="s{len(parts)}" class="mx-auto max-w-6xl px-6 py-20">\n'
            f'    <h2 class="text-3xl font-bold tracking-tight text-{c}-900">{text(5)}</h2>\n'
            f'    <p class="mt-4 text-{c}-600">{text(rng.randint(20, 40))}</p>\n'
            f'    <div class="mt-10 grid gap-8 md:grid-cols-3">\n{cards}    </div>\n'
            "  </section>\n"
        )
        parts.append(section)
        total += len(section)
    # Exactly `size` characters: the last section is cut short, as if still being written.
    return head + "".join(parts)[: size - len(head) - len(tail)] + tail


def arguments(content: str) -> str:
    return json.dumps({"path": "index.html", "content": content}, ensure_ascii=False)


def deltas(args: str) -> list[str]:
    return [args[i : i + DELTA] for i in range(0, len(args), DELTA)]


# -- 1. CPU ------------------------------------------------------------------------------


def run_scanner(pieces: Sequence[str]) -> int:
    scanner = ArgumentScanner()
    size = 0
    for piece in pieces:
        for fragment in scanner.feed(piece):
            size += len(fragment.text)
    return size


def cpu(fn: Callable[[Sequence[str]], int], pieces: Sequence[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn(pieces)
        best = min(best, time.process_time() - start)
    return best


# -- 2. gRPC bytes -----------------------------------------------------------------------


def grpc_bytes(pieces: Sequence[str]) -> tuple[int, int]:
    """(code_delta events, bytes on the wire) the agent sends for an unpaced stream."""
    sent = replay_stream(pieces, [0.0] * len(pieces), PreviewPolicyConfig()).code_deltas
    return len(sent), wire_bytes(sent)


# -- 3. browser replay -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Replay:
    frames: int
    bytes: int
    max_lag_s: float
    max_window_bytes: int
    lags: tuple[float, ...]  # per delta that decoded something, in seconds

    def lag_q(self, q: float) -> float:
        return quantile(self.lags, q)


def quantile(values: Sequence[float], q: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def replay_ours(
    pieces: Sequence[str],
    times: Sequence[float],
    config: PreviewPolicyConfig,
    code_tick_s: float | None = None,
) -> tuple[Replay, Chain]:
    """The production chain (bench/chain.py) on a simulated clock.

    Returns the replay and the chain's record (arrivals: per delta, (arrival time,
    content length after it); what the agent sent).
    """
    chain = replay_stream(pieces, times, config, code_tick_s=code_tick_s)
    assert chain.code == json.loads("".join(pieces))["content"]
    return _summarise(chain.set_code, chain.arrivals), chain


def content_lengths(pieces: Sequence[str]) -> list[tuple[float, int]]:
    """(0, content length after each delta): an unpaced stream."""
    scanner, length, out = ArgumentScanner(), 0, []
    for piece in pieces:
        for fragment in scanner.feed(piece):
            if fragment.key == "content":
                length = fragment.offset + len(fragment.text)
        out.append((0.0, length))
    return out


def replay_upstream(pieces: Sequence[str], arrivals: Sequence[tuple[float, int]]) -> Replay:
    """Upstream's rule: the whole file at once on every 40 new characters, then at the end."""
    # An empty frame: everything but the code.
    head = len(encode(frame("setCode", VARIANT, value="")))
    content = json.loads("".join(pieces))["content"]
    # Frame sizes from prefix sums of each character's JSON-escaped size.
    prefix = list(itertools.accumulate((_json_bytes(ch) for ch in content), initial=0))
    frames: list[tuple[float, int, int]] = []
    sent = -1
    for now, length in arrivals:
        if length > 0 and (sent < 0 or length - sent >= UPSTREAM_STEP):
            frames.append((now, length, head + prefix[length]))
            sent = length
    if sent != len(content):
        frames.append((arrivals[-1][0], len(content), head + prefix[-1]))
    return _summarise(frames, arrivals)


def _json_bytes(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode()) - 2


def _summarise(
    frames: Sequence[tuple[float, int, int]], arrivals: Sequence[tuple[float, int]]
) -> Replay:
    lags = delta_lags([(t, length) for t, length, _ in frames], arrivals)
    # Worst one-second window of frame bytes (a frame sent at u counts until u + 1 s).
    worst, total, i = 0, 0, 0
    for t, _, nbytes in frames:
        total += nbytes
        while frames[i][0] + 1.0 <= t:
            total -= frames[i][2]
            i += 1
        worst = max(worst, total)
    return Replay(len(frames), sum(f[2] for f in frames), max(lags), worst, tuple(lags))


def timed(
    size_kb: int, rate: float, config: PreviewPolicyConfig, code_tick_s: float | None
) -> tuple[Replay, Replay, Chain]:
    """A page whose characters arrive at `rate` per second (0: all at once) in evenly
    spaced deltas: ours, upstream's rule on the same arrivals, and the chain's record."""
    content = make_page(size_kb * KB)
    pieces = deltas(arguments(content))
    step = len(content) / rate / len(pieces) if rate else 0.0
    times = [i * step for i in range(1, len(pieces) + 1)]
    ours, chain = replay_ours(pieces, times, config, code_tick_s)
    return ours, replay_upstream(pieces, chain.arrivals), chain


def grpc_row(name: str, chain: Chain, content: str) -> tuple[list[str], float, float]:
    """A gRPC client's row of table 4, its wire ratio and its worst lag (s)."""
    lags = delta_lags(chain.code_seen, chain.arrivals)
    utf8, wire = len(content.encode()), wire_bytes(chain.code_deltas)
    payload = payload_bytes(chain.code_deltas, content) / utf8
    row = [name] + [f"{quantile(lags, q) * 1e3:.0f}" for q in (0.5, 0.99)]
    row += [f"{len(chain.code_deltas)} events", f"{wire / 1e6:.3f}"]
    row += [f"payload {payload:.2f}x, wire {wire / utf8:.2f}x", ""]
    return row, wire / utf8, max(lags)


def frontier(page_kb: int, rate: float, config: PreviewPolicyConfig) -> list[list[str]]:
    """Table 5: one row per code tick."""
    content, rows = make_page(page_kb * KB), []
    utf8 = len(content.encode())
    for tick in FRONTIER_TICKS_S:
        page, up, chain = timed(page_kb, rate, config, tick)
        lags = delta_lags(chain.code_seen, chain.arrivals)
        events = chain.code_deltas
        rows.append(
            [f"{tick * 1e3:.0f}" + (" (default)" if tick == DEFAULT_CODE_TICK_S else "")]
            + [f"{page.lag_q(q) * 1e3:.0f}" for q in (0.5, 0.99)]
            + [f"{page.bytes / up.bytes:.2f}x"]
            + [f"{quantile(lags, q) * 1e3:.0f}" for q in (0.5, 0.99)]
            + [f"{len(events)}", f"{len(events) / (chain.arrivals[-1][0] or 1):.0f}"]
            + [f"{payload_bytes(events, content) / utf8:.2f}x"]
            + [f"{wire_bytes(events) / utf8:.2f}x"]
            + [f"{wire_bytes(events, with_ids=True) / utf8:.2f}x"]
        )
    return rows


def fresh_row(name: str, replay: Replay, upstream: Replay) -> list[str]:
    return [
        name,
        f"{replay.lag_q(0.5) * 1e3:.0f}",
        f"{replay.lag_q(0.99) * 1e3:.0f}",
        f"{replay.frames}",
        f"{replay.bytes / 1e6:.2f}",
        f"{replay.bytes / upstream.bytes:.3f}x",
        f"{replay.max_window_bytes / 1e3:.0f}",
    ]


# -- main --------------------------------------------------------------------------------


def ratio(x: float) -> str:
    return f"{x:.2f}x" if x < 10 else f"{x:.0f}x"


def table(title: str, columns: str, rows: Sequence[Sequence[str]]) -> None:
    header = columns.split("|")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    opts = parser.parse_args(argv)
    ours_sizes: tuple[int, ...] = (25, 50, 100, 400)
    base_sizes: tuple[int, ...] = (25, 50, 100)
    page_kb, big_kb, repeat = 30, 400, 5
    if opts.quick:
        ours_sizes, base_sizes, page_kb, big_kb, repeat = (10, 25, 100), (10, 25), 10, 100, 3
    wall = time.perf_counter()

    # 1. CPU. The quadratic baseline dominates: run its sizes in parallel processes (each
    # measures its own CPU time) while nothing else runs, then measure ours alone.
    base_pieces = {size_kb: deltas(arguments(make_page(size_kb * KB))) for size_kb in base_sizes}
    workers = min(2, os.cpu_count() or 1)
    baselines = (run_rescan_baseline, run_rescan_regex)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        # Longest first, so the two workers finish together.
        jobs = {
            (fn.__name__, size_kb): pool.submit(cpu, fn, base_pieces[size_kb], 1)
            for size_kb in sorted(base_sizes, reverse=True)
            for fn in baselines
        }
        base = {job_key: job.result() for job_key, job in jobs.items()}
    rows, ours = [], {}
    for size_kb in ours_sizes:
        pieces = deltas(arguments(make_page(size_kb * KB)))
        ours[size_kb] = cpu(run_scanner, pieces, repeat)
        row = [f"{size_kb} KB", f"{len(pieces)}", f"{ours[size_kb] * 1e3:.1f}"]
        for fn in baselines:
            b = base.get((fn.__name__, size_kb))
            row += ["not run", ""] if b is None else [f"{b * 1e3:.0f}", f"{b / ours[size_kb]:.0f}x"]
        rows.append(row)
    table(
        f"1. Scanner CPU, {DELTA}-character deltas (time.process_time; ours: best of {repeat}; "
        "baselines are quadratic, so not run at the largest size)",
        "content|deltas|ours ms|re-scan ms|re-scan/ours|regex ms|regex/ours",
        rows,
    )
    small, large = ours_sizes[-2], ours_sizes[-1]
    growth = ours[large] / ours[small]
    print(f"  ours {small} KB -> {large} KB: {growth:.2f}x time for {large / small:.0f}x input")

    # 2. gRPC, and what upstream's rule would send the browser for the same stream.
    rows = []
    grpc_ratio = 0.0
    for size_kb in ours_sizes:
        content = make_page(size_kb * KB)
        pieces = deltas(arguments(content))
        events, nbytes = grpc_bytes(pieces)
        utf8 = len(content.encode())
        upstream = replay_upstream(pieces, content_lengths(pieces))
        grpc_ratio = max(grpc_ratio, nbytes / utf8)
        rows.append(
            [
                f"{size_kb} KB",
                f"{utf8}",
                f"{events}",
                f"{nbytes}",
                f"{nbytes / utf8:.3f}x",
                f"{upstream.bytes / utf8:.0f}x",
            ]
        )
    table(
        "2. gRPC code_delta bytes (protobuf size + 14 B transport framing per event), unpaced",
        "content|content B|events|gRPC B|gRPC/content|upstream setCode/content",
        rows,
    )

    # 3. Browser
    config = PreviewPolicyConfig()
    # The rule before issue 16: a 225 ms interval, the code on the agent's 40 ms tick.
    before = (PreviewPolicyConfig(min_interval_s=0.225, arrival_grace_s=0.05), DEFAULT_TICK_S)
    streams = [
        (f"{page_kb} KB @ 600 char/s", page_kb, 600.0, (config, None)),
        ("  same, before (225 ms, 40 ms tick)", page_kb, 600.0, before),
        (f"{big_kb} KB @ 20k char/s", big_kb, 20_000.0, (config, None)),
        (f"{big_kb} KB unpaced", big_kb, 0.0, (config, None)),
    ]
    rows, results = [], []
    for name, size_kb, rate, (row_config, tick) in streams:
        ours_replay, up, _ = timed(size_kb, rate, row_config, tick)
        results.append((up.bytes / ours_replay.bytes, ours_replay, up))
        r = ours_replay
        rows.append([name, f"{r.frames}", f"{r.bytes / 1e6:.2f}", f"{up.frames}"])
        rows[-1] += [f"{up.bytes / 1e6:.1f}", ratio(up.bytes / r.bytes)]
        rows[-1] += [f"{r.max_lag_s * 1e3:.0f}", f"{r.max_window_bytes / 1e3:.0f}"]
    table(
        "3. Browser setCode bytes, replayed on a simulated clock "
        f"(policy: {config.min_chars} chars, interval >= {config.min_interval_s * 1e3:.0f} ms "
        f"and frame bytes / {config.max_bytes_per_s / 2e6:g} MB/s, "
        f"{config.max_bytes_per_s / 1e6:g} MB/s cap)",
        "stream|ours frames|ours MB|upstream frames|upstream MB|fewer|max lag ms|max kB in 1 s",
        rows,
    )
    _, _, (big_fewer, big, fast_up), (unpaced_fewer, unpaced, _) = results

    # 4. Freshness at 50 deltas/s (8 characters each: 400 per second) and fast.
    page_rate = 50.0 * DELTA
    page, page_up, chain = timed(page_kb, page_rate, config, None)
    old, _, _ = timed(page_kb, page_rate, *before)
    grpc_page, grpc_paced, grpc_worst = grpc_row(
        f"{page_kb} KB @ 50 deltas/s, gRPC code_delta", chain, make_page(page_kb * KB)
    )
    _, _, big_chain = timed(big_kb, 20_000.0, config, None)
    grpc_big, grpc_fast, _ = grpc_row(
        f"{big_kb} KB @ 20k char/s, gRPC code_delta", big_chain, make_page(big_kb * KB)
    )
    rows = [
        fresh_row(f"{page_kb} KB @ 50 deltas/s", page, page_up),
        fresh_row("  same, before (225 ms, 40 ms tick)", old, page_up),
        fresh_row("  same, upstream's rule itself", page_up, page_up),
        fresh_row(f"{big_kb} KB @ 20k char/s", big, fast_up),
        grpc_page,
        grpc_big,
    ]
    table(
        "4. Freshness: delta to visible (the first setCode, or code_delta, showing what the "
        "delta decoded), simulated clock; upstream's rule: the whole file every 40 characters",
        "stream|p50 ms|p99 ms|frames|MB|vs upstream's bytes|max kB in 1 s",
        rows,
    )
    table(
        f"5. The code tick's frontier, {page_kb} KB @ 50 deltas/s: setCode (delta to visible, "
        "bytes vs upstream's rule) and gRPC code_delta (delta to visible, events, bytes vs "
        "content; with ids: each carrying generation_id and event_id, as before)",
        "code tick ms|setCode p50|p99|bytes|gRPC p50|p99|events|per s|payload|wire|with ids",
        frontier(page_kb, page_rate, config),
    )
    mid = 100 if 100 in base_sizes else base_sizes[-1]
    cap = config.max_bytes_per_s
    checks = [
        (
            f"scanner >= 100x less CPU than re-scan at {mid} KB",
            base[("run_rescan_baseline", mid)] / ours[mid] >= 100,
        ),
        (f"scanner time {small} -> {large} KB grows <= 4.6x", growth <= 4.6),
        ("gRPC preview bytes <= 1.2x content (unpaced)", grpc_ratio <= 1.2),
        (
            f"{page_kb} KB @ 50 deltas/s: delta to setCode p50 <= 60 ms, p99 <= 150 ms",
            page.lag_q(0.5) <= 0.06 and page.lag_q(0.99) <= 0.15,
        ),
        (
            f"{page_kb} KB @ 50 deltas/s: setCode bytes <= upstream's rule",
            page.bytes <= page_up.bytes,
        ),
        (
            f"{page_kb} KB @ 50 deltas/s: gRPC code_delta visible within one "
            f"{DEFAULT_TICK_S * 1e3:.0f} ms tick",
            grpc_worst <= DEFAULT_TICK_S + 1e-9,  # the simulated clock's float sums
        ),
        (f"{page_kb} KB @ 50 deltas/s: gRPC code_delta wire <= 1.2x content", grpc_paced <= 1.2),
        (f"{big_kb} KB @ 20k char/s: gRPC code_delta wire <= 1.2x content", grpc_fast <= 1.2),
        (f"{big_kb} KB fast: >= 50x fewer setCode bytes", min(big_fewer, unpaced_fewer) >= 50),
        (
            f"{big_kb} KB fast: within the {cap / 1e6:g} MB/s cap, final flush included",
            max(big.max_window_bytes, unpaced.max_window_bytes) <= cap,
        ),
    ]
    print(
        "\ntargets" + (" (quick mode: smaller sizes than the targets name)" if opts.quick else "")
    )
    for label, ok in checks:
        print(f"  {'met    ' if ok else 'NOT MET'}  {label}")
    print(f"\nwall time {time.perf_counter() - wall:.0f} s")


if __name__ == "__main__":
    main()
