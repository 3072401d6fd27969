"""Settings every provider test needs: the fakes listen on 127.0.0.1."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy from the environment would sit between the SDK and the fake, and a Vertex
    # setting would send google-genai to another API than the fake speaks.
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
