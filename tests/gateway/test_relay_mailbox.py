"""The relay's hand-off from the stream reader to the pump."""

from __future__ import annotations

import asyncio

import pytest

from services.gateway.relay import _TIMED_OUT, _Mailbox


async def test_items_come_in_order_before_any_deadline() -> None:
    box = _Mailbox(maxsize=4)
    box.put_nowait("a")
    await box.put("b")
    past = asyncio.get_running_loop().time() - 1
    # Waiting items are returned even when the deadline has passed.
    assert [await box.get(past), await box.get(past)] == ["a", "b"]
    assert await box.get(past) is _TIMED_OUT


async def test_a_waiting_get_wakes_on_put() -> None:
    box = _Mailbox(maxsize=4)
    getter = asyncio.create_task(box.get(asyncio.get_running_loop().time() + 3600))
    await asyncio.sleep(0)  # let it start waiting
    assert not getter.done()
    box.put_nowait("x")
    assert await getter == "x"


async def test_a_deadline_ends_the_wait() -> None:
    box = _Mailbox(maxsize=4)
    loop = asyncio.get_running_loop()
    assert await box.get(loop.time() + 0.001) is _TIMED_OUT
    box.put_nowait("late")
    assert await box.get() == "late"  # the expired wait left nothing behind


async def test_put_waits_for_room() -> None:
    box = _Mailbox(maxsize=2)
    await box.put(1)
    await box.put(2)
    assert box.full()
    putter = asyncio.create_task(box.put(3))
    await asyncio.sleep(0)
    assert not putter.done()
    assert await box.get() == 1
    await putter
    assert [await box.get(), await box.get()] == [2, 3]


async def test_a_cancelled_get_takes_nothing() -> None:
    box = _Mailbox(maxsize=2)
    getter = asyncio.create_task(box.get())
    await asyncio.sleep(0)
    getter.cancel()
    await asyncio.gather(getter, return_exceptions=True)
    box.put_nowait("kept")
    assert await box.get() == "kept"


async def test_a_second_consumer_or_producer_is_refused_while_one_waits() -> None:
    # One wake-up slot each: a second waiter would steal the first's and leave it asleep.
    box = _Mailbox(maxsize=1)
    getter = asyncio.create_task(box.get())
    await asyncio.sleep(0)  # let it start waiting
    with pytest.raises(RuntimeError, match="one consumer"):
        await box.get()
    box.put_nowait("x")
    assert await getter == "x"
    await box.put(1)
    putter = asyncio.create_task(box.put(2))
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="one producer"):
        await box.put(3)
    assert await box.get() == 1
    await putter
    assert await box.get() == 2
