"""A tool worker imports what it uses (issue 42): the scoring stack (NumPy, SciPy,
scikit-image), google-genai and the Replicate SDK load on the first score, extraction or
image call, so a worker that never does these idles small (76 MB against 163 MB)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("numpy", "scipy", "skimage", "google.genai", "replicate", "httpx")


def test_a_tool_worker_starts_without_the_libraries_of_tools_it_has_not_run() -> None:
    # A fresh interpreter: this test process has imported them all already.
    script = (
        "import json, sys; import services.tools.server, services.cli; "
        f"print(json.dumps(sorted(m for m in sys.modules if m in {list(HEAVY)!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout) == []


def test_the_scoring_code_still_finds_its_libraries_when_it_runs() -> None:
    from services.fidelity.metrics import block_color_closeness, visual_score

    assert block_color_closeness((0, 0, 0), (0, 0, 0)) == 1.0
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), "white").save(buffer, format="PNG")
    assert visual_score(buffer.getvalue(), buffer.getvalue()) == 1.0
