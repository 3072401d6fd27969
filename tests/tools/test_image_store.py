"""Input images by reference (issue 36): a tool call names the generation's images by hash,
the worker keeps them, and their bytes travel only to a worker that does not hold them."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import pytest_asyncio
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from s2c.tools.v1 import tool_service_pb2 as pb
from s2c.tools.v1 import tool_service_pb2_grpc as pb_grpc

from services.agent.tool_client import GrpcToolExecutor
from services.agent.tooling import ToolContext
from services.common.input_images import NOT_HELD_REASON, ImagesNotHeld, InputImage
from services.common.tool_types import ImageTag, ToolCall
from services.tools.image_store import BadImageRef, ImageRef, ImageStore
from services.tools.server import ToolsServer
from services.tools.settings import ToolsSettings

PNG = b"\x89PNG\r\n\x1a\n" + b"a screenshot"
OTHER = b"\x89PNG\r\n\x1a\n" + b"another one"


def ref(data: bytes, *, sent: bool = True) -> ImageRef:
    return ImageRef(hashlib.sha256(data).hexdigest(), "image/png", data if sent else b"")


def test_an_image_sent_once_is_named_by_hash_after() -> None:
    store = ImageStore(1 << 20)
    with pytest.raises(ImagesNotHeld) as missing:
        store.resolve([ref(PNG, sent=False)])
    assert missing.value.digests == (ref(PNG).sha256,)
    store.resolve([ref(PNG)])
    tagged = ImageRef(ref(PNG).sha256, "image/png", tag=ImageTag("pricing.html", 390))
    (image,) = store.resolve([tagged])
    assert (image.data, image.tag) == (PNG, ImageTag("pricing.html", 390))


def test_bytes_never_go_under_another_images_hash() -> None:
    store = ImageStore(1 << 20)
    with pytest.raises(BadImageRef, match=r"images\[0\]\.sha256"):
        store.keep([ImageRef(ref(PNG).sha256, "image/png", OTHER)])
    with pytest.raises(BadImageRef, match=r"images\[0\]\.mime_type"):
        store.keep([ImageRef(ref(PNG).sha256, "text/html", PNG)])
    assert len(store) == 0


def test_the_store_drops_the_least_recently_used_past_its_bound() -> None:
    store = ImageStore(len(PNG) + len(OTHER) - 1)
    store.keep([ref(PNG)])
    store.keep([ref(OTHER)])
    assert len(store) == 1
    with pytest.raises(ImagesNotHeld):
        store.resolve([ref(PNG, sent=False)])
    # An image larger than the whole store is still used as sent, only not kept.
    (image,) = ImageStore(4).resolve([ref(PNG)])
    assert image.data == PNG


@pytest_asyncio.fixture
async def tools(tmp_path: Path) -> AsyncIterator[ToolsServer]:
    server = ToolsServer(
        ToolsSettings(screenshots_enabled=False, listen="127.0.0.1:0", data_dir=tmp_path)
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def test_a_worker_asks_for_the_bytes_it_lacks_and_the_agent_sends_them(
    tools: ToolsServer,
) -> None:
    image = InputImage.of("image/png", PNG)
    stage = ToolCall("call_1", "save_assets", {"asset_ids": [image.upload_id]})
    context = ToolContext(input_images=(image,), asset_base_url="http://127.0.0.1:7001")
    executor = GrpcToolExecutor(f"127.0.0.1:{tools.port}")
    try:
        # Not held yet: the worker says so and the agent sends the bytes, unseen.
        outcome = await executor.execute(stage, None, context)
    finally:
        await executor.close()
    assert outcome.ok, outcome.result
    assert len(tools.worker.inputs) == 1

    async with grpc.aio.insecure_channel(f"127.0.0.1:{tools.port}") as channel:
        stub = pb_grpc.ToolServiceStub(channel)

        def named(*digests: str) -> pb.ExecuteToolRequest:
            refs = [pb.InputImage(sha256=d, mime_type="image/png") for d in digests]
            call = pb.ToolCall(id="call_2", name="save_assets")
            return pb.ExecuteToolRequest(call=call, context=pb.ToolContext(images=refs))

        # Held now: a call names it by hash alone.
        await stub.ExecuteTool(named(image.sha256), timeout=10)
        unknown = hashlib.sha256(OTHER).hexdigest()
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.ExecuteTool(named(image.sha256, unknown), timeout=10)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    status = rpc_status.from_call(caught.value)
    assert status is not None
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert (info.reason, dict(info.metadata)) == (NOT_HELD_REASON, {"sha256": unknown})
