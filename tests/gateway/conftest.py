"""The gateway's in-process tests run on asyncio's loop and on uvloop (tests/loops.py)."""

from tests.loops import pytest_asyncio_loop_factories

__all__ = ["pytest_asyncio_loop_factories"]
