"""The Replicate client: the real `replicate` SDK against the local fake Replicate API."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.tools.replicate_client import (
    BACKGROUND_REMOVAL_VERSION,
    FLUX_2_KLEIN,
    Z_IMAGE_TURBO,
    ModelRef,
    PredictionFailed,
    PredictionTimedOut,
    ReplicateClient,
    ReplicateHTTPError,
    ReplicateRequestError,
    ReplicateSettings,
    UnexpectedOutput,
    _env_proxy,
    generation_input,
    guess_image_mime,
    output_url,
)
from tests.fakes.replicate_server import Fail, FakeReplicate, Hang, HttpFailure, Succeed

TOKEN = "r8_client_test"
FAST = ReplicateSettings(poll_timeout_s=10.0, first_poll_s=0.001, max_poll_interval_s=0.005)
Z = ModelRef(model=Z_IMAGE_TURBO)


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeReplicate]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    async with FakeReplicate() as server:
        yield server


@pytest.fixture
async def client(fake: FakeReplicate) -> AsyncIterator[ReplicateClient]:
    async with ReplicateClient(TOKEN, fake.base_url, FAST) as rc:
        yield rc


def polls_of(fake: FakeReplicate, prediction_id: str) -> int:
    path = f"/v1/predictions/{prediction_id}"
    return sum(1 for r in fake.requests if r.method == "GET" and r.path == path)


# -- requests -------------------------------------------------------------------------------


async def test_model_by_name_posts_to_the_model_route(
    fake: FakeReplicate, client: ReplicateClient
) -> None:
    url = await client.run_for_url(Z, generation_input("a fox"), "ctx")
    assert url == fake.file_url("pred0001")
    (created,) = fake.creations
    assert (created.method, created.path) == (
        "POST",
        "/v1/models/prunaai/z-image-turbo/predictions",
    )
    assert created.json == {"input": generation_input("a fox")}
    assert created.authorization == f"Bearer {TOKEN}"
    assert created.headers["User-Agent"].startswith("replicate-python/")
    # No model lookup first, no Prefer header: one create, then polls.
    assert [r.path for r in fake.requests] == [
        "/v1/models/prunaai/z-image-turbo/predictions",
        "/v1/predictions/pred0001",
    ]
    assert "Prefer" not in created.headers


async def test_pinned_version_posts_to_predictions(
    fake: FakeReplicate, client: ReplicateClient
) -> None:
    ref = ModelRef(version=BACKGROUND_REMOVAL_VERSION)
    await client.run_for_url(ref, {"image": "https://example.com/a.png"}, "ctx")
    (created,) = fake.creations
    assert created.path == "/v1/predictions"
    assert created.json == {
        "version": BACKGROUND_REMOVAL_VERSION,
        "input": {"image": "https://example.com/a.png"},
    }
    assert all(r.path.startswith("/v1/predictions") for r in fake.requests)


def test_model_ref_needs_exactly_one_target() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        ModelRef()
    with pytest.raises(ValueError, match="exactly one"):
        ModelRef(model=Z_IMAGE_TURBO, version=BACKGROUND_REMOVAL_VERSION)


def test_generation_inputs() -> None:
    assert generation_input("p") == {
        "prompt": "p",
        "width": 1024,
        "height": 1024,
        "go_fast": False,
        "output_format": "png",
        "guidance_scale": 0,
        "num_inference_steps": 8,
    }
    assert generation_input("p", FLUX_2_KLEIN) == {
        "prompt": "p",
        "aspect_ratio": "1:1",
        "output_format": "png",
    }


async def test_explicit_token_and_base_url_beat_the_environment(
    fake: FakeReplicate, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLICATE_API_TOKEN", "r8_from_env")
    monkeypatch.setenv("REPLICATE_BASE_URL", "http://127.0.0.1:9")
    async with ReplicateClient("r8_explicit", fake.base_url, FAST) as rc:
        await rc.run(Z, {"prompt": "x"})
    assert {r.authorization for r in fake.requests} == {"Bearer r8_explicit"}


def test_a_token_is_required() -> None:
    with pytest.raises(ValueError, match="token"):
        ReplicateClient("", "http://127.0.0.1:9")


# -- polling and outcomes -------------------------------------------------------------------


@pytest.mark.parametrize("polls", [0, 1, 4])
async def test_polls_until_succeeded(
    fake: FakeReplicate, client: ReplicateClient, polls: int
) -> None:
    fake.default = Succeed(polls=polls)
    assert await client.run(Z, {"prompt": "x"}) == fake.file_url("pred0001")
    assert polls_of(fake, "pred0001") == polls


async def test_failed_prediction_with_error(fake: FakeReplicate, client: ReplicateClient) -> None:
    fake.default = Fail("NSFW content detected", polls=2)
    with pytest.raises(PredictionFailed, match=r"^Inference errored out: NSFW content detected$"):
        await client.run(Z, {"prompt": "x"})


async def test_failed_prediction_without_error(
    fake: FakeReplicate, client: ReplicateClient
) -> None:
    fake.default = Fail(None)
    with pytest.raises(PredictionFailed, match=r"^Inference failed$"):
        await client.run(Z, {"prompt": "x"})


async def test_timeout_cancels_the_prediction(fake: FakeReplicate) -> None:
    fake.default = Hang()
    settings = ReplicateSettings(poll_timeout_s=0.05, first_poll_s=0.001, max_poll_interval_s=0.005)
    async with ReplicateClient(TOKEN, fake.base_url, settings) as rc:
        with pytest.raises(PredictionTimedOut, match=r"^Inference timed out$") as caught:
            await rc.run(Z, {"prompt": "x"})
    assert isinstance(caught.value, TimeoutError)
    assert fake.cancels == ["pred0001"]
    assert fake.predictions["pred0001"].status == "canceled"


async def test_caller_cancellation_cancels_the_prediction(
    fake: FakeReplicate, client: ReplicateClient
) -> None:
    fake.default = Hang()
    task = asyncio.create_task(client.run(Z, {"prompt": "x"}))
    await fake.wait_for(lambda f: polls_of(f, "pred0001") >= 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert fake.cancels == ["pred0001"]


async def test_http_error_on_create(fake: FakeReplicate, client: ReplicateClient) -> None:
    fake.default = HttpFailure(422, "Invalid input: prompt is required")
    with pytest.raises(ReplicateHTTPError) as caught:
        await client.run(Z, {"prompt": "x"})
    assert str(caught.value) == "HTTP error occurred: 422 Invalid input: prompt is required"
    assert caught.value.status == 422


async def test_wrong_token_is_an_http_error(fake: FakeReplicate) -> None:
    fake.token = "r8_the_right_one"
    async with ReplicateClient("r8_wrong", fake.base_url, FAST) as rc:
        with pytest.raises(ReplicateHTTPError, match=r"^HTTP error occurred: 401 ") as caught:
            await rc.run(Z, {"prompt": "x"})
    assert "r8_wrong" not in str(caught.value)


async def test_transport_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with ReplicateClient(TOKEN, f"http://127.0.0.1:{port}", FAST) as rc:
        with pytest.raises(ReplicateRequestError, match=r"^An error occurred while requesting: "):
            await rc.run(Z, {"prompt": "x"})


# -- output normalisation -------------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        "https://x.test/a.png",
        {"url": "https://x.test/a.png"},
        ["https://x.test/a.png", "https://x.test/b.png"],
        [{"url": "https://x.test/a.png"}],
        " https://x.test/a.png ",
    ],
)
def test_output_url_shapes(output: Any) -> None:
    assert output_url(output, "ctx") == "https://x.test/a.png"


@pytest.mark.parametrize("output", [[], None, {}, {"uri": "x"}, [1], "", "  ", 42, [[]]])
def test_unexpected_outputs(output: Any) -> None:
    with pytest.raises(UnexpectedOutput, match=r"^Unexpected response from my-model: "):
        output_url(output, "my-model")


@pytest.mark.parametrize("shape", ["str", "list", "dict", "list_dict"])
async def test_every_output_shape_from_the_api(
    fake: FakeReplicate, client: ReplicateClient, shape: Any
) -> None:
    fake.default = Succeed(shape=shape)
    assert await client.run_for_url(Z, {"prompt": "x"}, "ctx") == fake.file_url("pred0001")


async def test_unexpected_output_from_the_api(fake: FakeReplicate, client: ReplicateClient) -> None:
    fake.default = Succeed(output=[])
    with pytest.raises(UnexpectedOutput, match=r"^Unexpected response from z: \[\]$"):
        await client.run_for_url(Z, {"prompt": "x"}, "z")


def test_guess_image_mime() -> None:
    assert guess_image_mime("https://x.test/a.webp?sig=1") == "image/webp"
    assert guess_image_mime("https://x.test/a.JPG") == "image/jpeg"
    assert guess_image_mime("https://x.test/a") == "image/png"
    assert guess_image_mime("https://x.test/a.txt") == "image/png"


# -- batches --------------------------------------------------------------------------------


async def test_many_keeps_input_order_and_maps_failures_to_none(
    fake: FakeReplicate, client: ReplicateClient
) -> None:
    # The first finishes last and the last first: order must come from the inputs.
    prompts = [f"p{i}" for i in range(6)]
    for i, prompt in enumerate(prompts):
        fake.script(prompt, Succeed(polls=6 - i))
    fake.script("p3", Fail("boom"))
    urls = await client.run_many_for_urls(Z, [{"prompt": p} for p in prompts], "ctx")
    by_prompt = {p.input["prompt"]: p.id for p in fake.predictions.values()}
    expected = [None if p == "p3" else fake.file_url(by_prompt[p]) for p in prompts]
    assert urls == expected


async def test_many_never_exceeds_twenty_in_flight(
    fake: FakeReplicate, client: ReplicateClient
) -> None:
    fake.hold()
    inputs = [{"prompt": f"p{i}"} for i in range(25)]
    task = asyncio.create_task(client.run_many_for_urls(Z, inputs, "ctx"))
    # Twenty created and each polled a few times: any 21st create would have arrived by now.
    await fake.wait_for(
        lambda f: f.in_flight >= 20 and all(p.polls >= 3 for p in f.predictions.values())
    )
    assert len(fake.creations) == 20
    fake.release()
    urls = await task
    assert fake.max_in_flight == 20
    assert len(fake.creations) == 25
    assert all(url is not None for url in urls)


async def test_concurrency_limit_is_configurable(fake: FakeReplicate) -> None:
    fake.hold()
    settings = ReplicateSettings(first_poll_s=0.001, max_poll_interval_s=0.005, max_concurrency=3)
    async with ReplicateClient(TOKEN, fake.base_url, settings) as rc:
        task = asyncio.create_task(
            rc.run_many_for_urls(Z, [{"prompt": str(i)} for i in range(7)], "c")
        )
        await fake.wait_for(
            lambda f: f.in_flight >= 3 and all(p.polls >= 3 for p in f.predictions.values())
        )
        fake.release()
        await task
    assert fake.max_in_flight == 3
    assert len(fake.creations) == 7


# -- downloads and proxies ------------------------------------------------------------------


async def test_fetch_image_only_from_the_same_origin(
    fake: FakeReplicate, client: ReplicateClient
) -> None:
    url = await client.run_for_url(Z, {"prompt": "x"}, "ctx")
    assert await client.fetch_image(url) == (fake.png, "image/png")
    assert fake.files_served == ["pred0001.png"]
    assert await client.fetch_image("http://127.0.0.1:9/files/pred0001.png") is None
    assert await client.fetch_image(f"{fake.base_url}/files/missing.png") is None


def test_environment_proxy_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,.corp.example")
    assert _env_proxy("https://api.replicate.com") == "http://proxy.internal:3128"
    assert _env_proxy("http://127.0.0.1:8000") is None
    assert _env_proxy("https://replicate.corp.example") is None
