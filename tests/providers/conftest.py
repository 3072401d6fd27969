"""Settings every provider test needs: the fakes listen on 127.0.0.1. Every test runs on
asyncio's loop and on uvloop, which `s2c agent` runs on (tests/loops.py)."""

from __future__ import annotations

import pytest

from tests.loops import pytest_asyncio_loop_factories

__all__ = ["pytest_asyncio_loop_factories"]


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy from the environment would sit between the SDK and the fake, and a Vertex
    # setting would send google-genai to another API than the fake speaks.
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
