"""`prompt.imageMeta` / `Prompt.image_meta`: bad tags are refused with the field named
(WS `error` + 4332, gRPC INVALID_ARGUMENT)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2

from services.common.errors import bad_request_violations
from tests.suite import (
    Suite,
    create_params,
    generation_refusal,
    png_data_url,
    run_ws,
    running_suite,
)

IMAGE = png_data_url()
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def suite(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Suite]:
    async with running_suite(tmp_path_factory.mktemp("meta")) as running:
        yield running


def _params(images: int, meta: Any) -> dict[str, Any]:
    return create_params(prompt={"text": "", "images": [IMAGE] * images, "imageMeta": meta})


@pytest.mark.parametrize(
    ("images", "meta", "said"),
    [
        (1, [{"viewportWidth": 200}], "prompt.imageMeta[0].viewportWidth must be 240-3840"),
        (2, [{}, {"viewportWidth": 4000}], "prompt.imageMeta[1].viewportWidth must be 240-3840"),
        (1, [{"viewportWidth": "390"}], "prompt.imageMeta[0].viewportWidth must be an integer"),
        (1, [{"page": "../etc"}], "prompt.imageMeta[0].page must be a file stem"),
        (1, [{"page": "a b"}], "prompt.imageMeta[0].page must be a file stem"),
        (1, [{"page": 3}], "prompt.imageMeta[0].page must be a string"),
        (1, [{}, {}], "prompt.imageMeta: 2 tags for 1 images"),
        (1, "wide", "prompt.imageMeta must be a list"),
        (1, ["wide"], "prompt.imageMeta[0] must be an object"),
        (13, [{"page": f"p{i}"} for i in range(13)], "prompt.image_meta: at most 12 pages"),
        # Tags or not, a create carries at most 20 images.
        (21, [{"viewportWidth": 390}], "prompt.images: at most 20 items, got 21"),
    ],
)
async def test_bad_tags_are_refused_naming_the_field(
    suite: Suite, images: int, meta: Any, said: str
) -> None:
    result = await run_ws(suite.ws_url, _params(images, meta))
    errors = result.of("error")
    assert len(errors) == 1, errors
    assert said in errors[0]["value"]
    assert result.close_code == 4332
    assert not result.of("setCode")


async def test_grpc_names_every_bad_tag(suite: Suite) -> None:
    request = pb.GenerateCodeRequest(
        prompt=pb.Prompt(
            images=[IMAGE, IMAGE],
            image_meta=[
                pb.ImageMeta(viewport_width=100),
                pb.ImageMeta(page="x/y"),
                pb.ImageMeta(),
            ],
        ),
        files=[common_pb2.FileState(path="../up.html", content="x")],
    )
    refused = await generation_refusal(suite.agent.port, request)
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    fields = {v.field for v in bad_request_violations(refused)}
    assert fields == {
        "prompt.image_meta",
        "prompt.image_meta[0].viewport_width",
        "prompt.image_meta[1].page",
        "files[0].path",
    }


async def test_upstream_client_gets_the_entry_page_of_a_demo_site(suite: Suite) -> None:
    # The demo model (no key) builds a linked site from three tagged pages; a client of
    # the upstream protocol sees index.html as its code, the other files as setFile frames.
    meta = [{"page": "index"}, {"page": "pricing"}, {"page": "about", "viewportWidth": 390}]
    result = await run_ws(suite.ws_url, _params(3, meta))
    assert result.close_code == 1000
    assert not result.of("error")
    for variant in (0, 1):
        code = result.last_code(variant)
        assert "Page: index" in code
        assert '<a href="pricing.html"' in code
        files = {f["path"]: f["value"] for f in result.of("setFile", variant)}
        assert sorted(files) == ["about.html", "pricing.html", "site.css"]
        # What the pages share is one stylesheet each links by a relative path.
        assert '<link rel="stylesheet" href="site.css">' in code
        assert "[data-demo-site]" in files["site.css"]
        assert "Page: pricing" in files["pricing.html"]
        assert '<a href="about.html"' in files["pricing.html"]


async def test_demo_builds_one_responsive_page_from_three_widths(suite: Suite) -> None:
    meta = [{"viewportWidth": w} for w in (1280, 768, 390)]
    result = await run_ws(suite.ws_url, _params(3, meta))
    assert result.close_code == 1000
    assert not result.of("setFile")
    thinking = "".join(f["value"] for f in result.of("thinking", 0))
    assert "one page at 3 widths (1280 px, 768 px, 390 px)" in thinking
    assert "<!DOCTYPE html>" in result.last_code(0)
