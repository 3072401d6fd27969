"""GC-pause bench: how long a full collection stalls each service's event loop.

Run alone from the repository root:

    .venv/bin/python bench/gc_pause.py            # best of 5 per service: a few seconds

A full (generation 2) collection walks every object the collector tracks, and while it
runs the service's event loop runs nothing: every stream waits, so each one lands in the
preview's latency tail. Most of what a service's heap holds is what its imports built
(the SDKs, their pydantic models, protobuf descriptors, grpc) and keeps for the life of
the process. A child process per service imports what `s2c <service>` runs (the agent
also its four provider sessions, as it imports those it has keys for before it serves:
`registry.configured_modules`), then times `gc.collect()` (best of 5) before and after
`gc.freeze()`, which every service calls once its server is up (`grpc_server.freeze_startup_heap`).
One row shows the agent as it ran before the preload: frozen first, its SDK imported at
the first generation and so left in every full collection's view. The live heap a
loaded agent adds
(event logs, retained generations) is not counted: the table is the part the freeze
removes from every full collection. Nothing is asserted.
"""

from __future__ import annotations

import gc
import importlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]

_SESSIONS: Final = [
    "services.agent.providers.openai_responses",
    "services.agent.providers.openai_chat",
    "services.agent.providers.anthropic",
    "services.agent.providers.gemini",
]
# Per row: the modules imported before the freeze, and those imported after it.
SERVICES: Final = {
    "agent": (["services.agent.server", *_SESSIONS], []),
    # What a serving agent had until the provider sessions were preloaded
    # (registry.configured_modules): it froze its heap first and imported the SDK at its first
    # generation, so the SDK stayed in every full collection's view.
    "agent, openai imported after the freeze": (
        ["services.agent.server"],
        ["services.agent.providers.openai_responses"],
    ),
    "gateway": (["services.gateway.app"], []),
    "tools": (["services.tools.server"], []),
}
RUNS: Final = 5


def _full_collection_ms() -> float:
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        gc.collect()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def _child(service: str) -> None:
    before_freeze, after_freeze = SERVICES[service]
    for module in before_freeze:
        importlib.import_module(module)
    gc.collect()
    tracked = len(gc.get_objects())
    before = _full_collection_ms()
    gc.freeze()
    for module in after_freeze:
        importlib.import_module(module)
    after = _full_collection_ms()
    print(json.dumps({"tracked": tracked, "before_ms": before, "after_ms": after}))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        sys.path.insert(0, str(ROOT))
        _child(sys.argv[2])
        return
    print(f"{'service':40} {'tracked objects':>16} {'full GC ms':>11} {'after freeze':>13}")
    for service in SERVICES:
        out = subprocess.run(
            [sys.executable, __file__, "--child", service],
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        r = json.loads(out.stdout.splitlines()[-1])
        print(f"{service:40} {r['tracked']:16,} {r['before_ms']:11.1f} {r['after_ms']:13.2f}")


if __name__ == "__main__":
    main()
