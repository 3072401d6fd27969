"""Both event loops for a directory's in-process tests: asyncio's, and uvloop, which the
`s2c` services run on. They differ in small ways that matter to timers: uvloop's `call_at`
returns a plain Handle, without `when()`, for a time under a millisecond away, and its
timers have a resolution of a millisecond. A conftest imports the hook below."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest
import uvloop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
