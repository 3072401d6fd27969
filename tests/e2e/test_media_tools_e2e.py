"""Image tools behind the whole suite: the model saves an upload and generates an image.

OpenAI (fake) drives the tools; Replicate (fake) generates; the tool worker stores
assets that the gateway serves; the images come back to the model's next turn.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import aiohttp
import grpc
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc
from s2c.common.v1 import common_pb2

from services.agent.settings import AgentSettings
from services.common.structs import from_struct
from tests.fakes.openai_server import FakeOpenAI, FunctionCall, Text, responses_turn
from tests.fakes.replicate_server import FakeReplicate, Succeed
from tests.suite import png_data_url, running_suite

PAGE = "<!DOCTYPE html><html><body><img src='{logo}'></body></html>"


async def test_save_assets_and_generate_images_reach_the_page_and_the_model(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    upload = png_data_url(32, 16, "#ff0000")
    upload_bytes = base64.b64decode(upload.split(",", 1)[1])
    asset_id = "tmp_asset_" + hashlib.sha256(upload_bytes).hexdigest()[:24]
    openai = fake_openai
    async with FakeReplicate(token="r8_test_token") as replicate:
        replicate.script("a mountain at dawn", Succeed(polls=1))
        openai.add_response(
            responses_turn(
                [
                    FunctionCall("c1", "save_assets", json.dumps({"asset_ids": [asset_id]})),
                    FunctionCall(
                        "c2", "generate_images", json.dumps({"prompts": ["a mountain at dawn"]})
                    ),
                ]
            )
        )
        settings = AgentSettings(provider_max_retries=0)
        async with running_suite(tmp_path, agent=settings) as suite:
            # Asset names are content hashes, so the page can be scripted up front.
            logo = f"{suite.http_url}/local-assets/asset_{asset_id[len('tmp_asset_') :]}.png"
            page = PAGE.format(logo=logo)
            openai.add_response(
                responses_turn(
                    [
                        FunctionCall(
                            "c3", "create_file", json.dumps({"path": "index.html", "content": page})
                        )
                    ]
                ),
                responses_turn([Text(["Done."])]),
            )
            # The second turn depends on the first turn's results: script it once known.
            async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
                stub = pb_grpc.AgentServiceStub(channel)
                request = pb.GenerateCodeRequest(
                    input_mode=pb.INPUT_MODE_IMAGE,
                    prompt=pb.Prompt(text="use my logo", images=[upload]),
                    variant_count=1,
                    models=["gpt-5.5 (high effort)"],
                    asset_base_url=suite.http_url,
                    credentials=common_pb2.Credentials(
                        providers={
                            "openai": common_pb2.ProviderCredentials(
                                api_key="sk-test", base_url=openai.base_url
                            ),
                            "replicate": common_pb2.ProviderCredentials(
                                api_key="r8_test_token",
                                base_url=replicate.base_url,
                            ),
                        }
                    ),
                )
                events = [e async for message in stub.GenerateCode(request) for e in message.events]
            async with aiohttp.ClientSession() as http, http.get(logo) as served:
                assert served.status == 200
                assert await served.read() == upload_bytes

    results = [e.tool_result for e in events if e.HasField("tool_result")]
    assert [(r.name, r.ok) for r in results] == [
        ("save_assets", True),
        ("generate_images", True),
        ("create_file", True),
    ]
    assert logo.startswith(f"{suite.http_url}/local-assets/asset_")
    assert asset_id not in logo
    assert events[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
    final = [e.code_snapshot.content for e in events if e.HasField("code_snapshot")][-1]
    assert logo in final
    saved = from_struct(results[0].output)
    assert saved["images"][0]["public_url"] == logo
    generated = from_struct(results[1].output)["images"][0]
    assert generated["status"] == "ok"
    assert generated["url"].startswith(replicate.base_url)
    # Both images went back to the model in the next turn, as images it can see.
    second_turn = openai.requests[1].json["input"]
    outputs = [item for item in second_turn if item.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["c1", "c2"]
    for output in outputs:
        parts = output["output"]
        assert parts[0]["type"] == "input_text"
        images = [p for p in parts if p["type"] == "input_image"]
        assert len(images) == 1
        assert images[0]["image_url"].startswith("data:image/png;base64,")
    creation = replicate.creations[0]
    assert creation.authorization == "Bearer r8_test_token"
    assert creation.json["input"]["prompt"] == "a mountain at dawn"
