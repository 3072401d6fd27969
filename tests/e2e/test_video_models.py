"""Video reaches only models that read it (issue #15, item 5).

Unpinned, video mode picks the Gemini video models as upstream does, even when other
keys are present; a pinned model that would drop the video is refused up front — gRPC
INVALID_ARGUMENT naming the field, an `error` frame and 4332 in the browser — instead
of being told to "analyze this video" it never receives.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

import grpc
from s2c.agent.v1 import agent_service_pb2 as pb

from services.agent.settings import AgentSettings
from services.common.errors import bad_request_violations
from tests.fakes.gemini_server import FakeGemini, Say
from tests.fakes.openai_server import FakeOpenAI
from tests.suite import create_params, fake_providers, generation_refusal, run_ws, running_suite

VIDEO = "data:video/mp4;base64," + base64.b64encode(b"\0\0\0\x18ftypmp42" + b"\0" * 64).decode()
GEMINI_VIDEO = [
    "gemini-3-flash-preview (minimal thinking)",
    "gemini-3.1-pro-preview (high thinking)",
]
NEEDS_GEMINI = (
    "takes no video input; video needs a Gemini model, e.g. "
    "gemini-3-flash-preview (minimal thinking) or gemini-3.1-pro-preview (high thinking)"
)


def video_params(**overrides: object) -> dict[str, object]:
    return create_params(
        inputMode="video",
        prompt={"text": "", "images": [], "videos": [VIDEO]},
        isAssetExtractionEnabled=False,
        **overrides,
    )


def settings(openai: FakeOpenAI, gemini: FakeGemini) -> AgentSettings:
    return fake_providers(openai=openai.base_url, gemini=gemini.base_url)


def sent_video(gemini: FakeGemini) -> bool:
    return "video/mp4" in json.dumps([r.body for r in gemini.requests])


async def test_unpinned_video_goes_to_the_gemini_video_models_only(
    tmp_path: Path, fake_openai: FakeOpenAI, fake_gemini: FakeGemini
) -> None:
    fake_gemini.add_turn(Say("Done."))
    fake_gemini.add_turn(Say("Done."))
    params = video_params(openAiApiKey="key-openai", geminiApiKey="key-gemini")
    async with running_suite(tmp_path, agent=settings(fake_openai, fake_gemini)) as suite:
        result = await run_ws(suite.ws_url, params)
    models = result.of("variantModels")[0]["data"]["models"]
    assert models == GEMINI_VIDEO
    assert fake_openai.requests == []
    assert len(fake_gemini.requests) == 2
    assert sent_video(fake_gemini)
    assert result.close_code == 1000


async def test_a_pinned_gemini_model_takes_the_video(
    tmp_path: Path, fake_openai: FakeOpenAI, fake_gemini: FakeGemini
) -> None:
    fake_gemini.add_turn(Say("Done."))
    fake_gemini.add_turn(Say("Done."))
    agent = replace(settings(fake_openai, fake_gemini), pinned_models=(GEMINI_VIDEO[0],))
    async with running_suite(tmp_path, agent=agent) as suite:
        result = await run_ws(suite.ws_url, video_params(geminiApiKey="key-gemini"))
    assert result.of("variantModels")[0]["data"]["models"] == [GEMINI_VIDEO[0]] * 2
    assert sent_video(fake_gemini)
    assert result.close_code == 1000


async def test_video_to_a_model_pinned_by_s2c_models_is_refused_in_the_browser(
    tmp_path: Path, fake_openai: FakeOpenAI, fake_gemini: FakeGemini
) -> None:
    agent = replace(settings(fake_openai, fake_gemini), pinned_models=("gpt-5.5 (high thinking)",))
    async with running_suite(tmp_path, agent=agent) as suite:
        result = await run_ws(suite.ws_url, video_params(openAiApiKey="key-openai"))
    assert result.frames == [
        {
            "type": "error",
            "value": "Invalid request: prompt.videos: Model gpt-5.5 (high thinking) "
            f"{NEEDS_GEMINI} (pinned by S2C_MODELS)",
        }
    ]
    assert result.close_code == 4332
    assert fake_openai.requests == []


async def test_video_to_a_model_the_request_pins_is_invalid_argument(tmp_path: Path) -> None:
    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_UPDATE,
        input_mode=pb.INPUT_MODE_IMAGE,
        models=[GEMINI_VIDEO[0], "claude-opus-4-8 (medium effort)"],
        prompt=pb.Prompt(text="Make it blue"),
        # The video comes with the history: it would be dropped all the same.
        history=[pb.HistoryMessage(role=pb.ROLE_USER, text="This app", videos=[VIDEO])],
    )
    async with running_suite(tmp_path) as suite:
        refused = await generation_refusal(suite.agent.port, request)
        assert suite.agent.manager.generations() == []
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    violations = [(v.field, v.description) for v in bad_request_violations(refused)]
    assert violations == [("models[1]", f"Model claude-opus-4-8 (medium effort) {NEEDS_GEMINI}")]


async def test_video_mode_with_only_local_models_asks_for_a_gemini_key(tmp_path: Path) -> None:
    agent = AgentSettings(
        demo_pace_s=0.0, local_models=("llama3.2",), local_base_url="http://127.0.0.1:9/v1"
    )
    async with running_suite(tmp_path, agent=agent) as suite:
        result = await run_ws(suite.ws_url, video_params())
    assert result.frames[-1] == {
        "type": "error",
        "value": "Video mode requires a Gemini API key. Add it in the settings dialog "
        "or set GEMINI_API_KEY.",
    }
    assert result.close_code == 4332
