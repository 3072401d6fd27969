"""bench/chain.py: the preview bench replays through the production agent and gateway."""

from __future__ import annotations

import itertools
import json

from bench.chain import replay_stream
from services.gateway.preview_policy import PreviewPolicyConfig

CONTENT = "<!DOCTYPE html><html><body>" + "<p>café ✨ “quoted”</p>\n" * 120 + "</body></html>"


def pieces_of(content: str, size: int = 8) -> list[str]:
    arguments = json.dumps({"path": "index.html", "content": content}, ensure_ascii=False)
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]


def test_a_paced_stream_reaches_the_browser_paced_and_complete() -> None:
    pieces = pieces_of(CONTENT)
    times = [i * 0.0025 for i in range(1, len(pieces) + 1)]  # 3200 characters a second
    config = PreviewPolicyConfig()
    replay = replay_stream(pieces, times, config)

    assert replay.code == CONTENT
    assert replay.arrivals[-1] == (times[-1], len(CONTENT))
    # The event log merged the model's deltas (about sixteen per 40 ms tick).
    assert 1 < len(replay.code_deltas) < len(pieces) / 3
    frame_times = [t for t, _, _ in replay.set_code]
    assert frame_times == sorted(frame_times)
    # Between the first frame and the snapshot at the end, the policy's interval holds.
    middle = frame_times[:-1]
    assert all(b - a >= config.min_interval_s - 1e-9 for a, b in itertools.pairwise(middle))
    # Sizes are those of the frames the gateway encoded.
    last = json.dumps(
        {"type": "setCode", "variantIndex": 1, "value": CONTENT},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    assert replay.set_code[-1][1:] == (len(CONTENT), len(last.encode()))


def test_an_unpaced_stream_leaves_the_agent_as_two_code_deltas() -> None:
    pieces = pieces_of(CONTENT)
    replay = replay_stream(pieces, [0.0] * len(pieces), PreviewPolicyConfig())

    first, rest = replay.code_deltas
    assert (first.code_delta.offset, rest.code_delta.offset) == (0, len(first.code_delta.text))
    assert "".join(e.code_delta.text for e in replay.code_deltas) == CONTENT
    assert replay.code == CONTENT
