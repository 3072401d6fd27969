"""bench/ui_stream.py: our UI's appends, measured through the production gateway."""

from __future__ import annotations

import json
import zlib

from bench.ui_stream import Frames, run
from services.agent.eventlog import DEFAULT_TICK_S
from services.gateway.preview_policy import PreviewPolicyConfig


def test_appends_rebuild_the_file_once_and_fresh() -> None:
    config = PreviewPolicyConfig()
    ours = run(2, 400.0, config, append=True)
    whole = run(2, 400.0, config, append=False)
    # `run` itself checks the client ended with the file.
    assert ours.frames.whole == 0
    assert whole.frames.whole == len(whole.frames.code)
    values = "".join(json.loads(text)["value"] for _, _, text in ours.frames.code)
    assert values == ours.content  # each character once
    assert ours.frames.json_bytes() < whole.frames.json_bytes()
    assert max(ours.lags) <= DEFAULT_TICK_S + config.append_interval_s + 1e-9


def test_deflated_bytes_are_what_a_permessage_deflate_reader_inflates() -> None:
    texts = [
        '{"type":"appendCode","variantIndex":0,"value":"<p>' + "x" * n + '"}' for n in (1, 300)
    ]
    frames = Frames(code=[(0.0, 0, t) for t in texts])
    deflate = zlib.compressobj(1, zlib.DEFLATED, -15)
    inflate = zlib.decompressobj(-15)
    sizes = []
    for text in texts:
        payload = deflate.compress(text.encode()) + deflate.flush(zlib.Z_SYNC_FLUSH)
        # RFC 7692: the sender drops the flush's 4-byte tail, the reader puts it back.
        assert inflate.decompress(payload[:-4] + b"\x00\x00\xff\xff").decode() == text
        sizes.append(len(payload) - 4 + 2)  # with a 2-byte frame header (< 126 bytes)
    assert frames.deflated_bytes() == sum(sizes)
