"""The `variantModels` frame carries upstream's model ids, for every mix of keys.

The upstream UI keys its badges and tooltips on these strings (its `Llm` values), so
they are written out here as upstream spells them, not taken from our constants. Each
provider is a fake server that answers every turn with plain text, so each variant
completes in one turn.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Text
from tests.fakes.gemini_server import FakeGemini, Say
from tests.fakes.openai_server import FakeOpenAI, responses_turn
from tests.fakes.openai_server import Text as OText
from tests.suite import create_params, fake_providers, run_ws, running_suite

OPUS_MED = "claude-opus-4-8 (medium effort)"
OPUS_HIGH = "claude-opus-4-8 (high effort)"
SONNET = "claude-sonnet-4-6"
GPT_HIGH = "gpt-5.5 (high thinking)"
GPT_LOW = "gpt-5.5 (low thinking)"
TERRA_LOW = "gpt-5.6-terra (low thinking)"
G3F_MIN = "gemini-3-flash-preview (minimal thinking)"
G3F_HIGH = "gemini-3-flash-preview (high thinking)"
G31P_LOW = "gemini-3.1-pro-preview (low thinking)"
G31P_HIGH = "gemini-3.1-pro-preview (high thinking)"

KEYS = {"openai": "openAiApiKey", "anthropic": "anthropicApiKey", "gemini": "geminiApiKey"}
# A few bytes with an MP4 header: enough for the Gemini session to name its MIME type.
VIDEO = "data:video/mp4;base64," + base64.b64encode(b"\0\0\0\x18ftypmp42" + b"\0" * 64).decode()
UPDATE = {
    "generationType": "update",
    "prompt": {"text": "Make it blue", "images": [], "videos": []},
    "history": [
        {"role": "user", "text": "A page", "images": [], "videos": []},
        {"role": "assistant", "text": "<html><body>Hi</body></html>", "images": [], "videos": []},
        {"role": "user", "text": "Make it blue", "images": [], "videos": []},
    ],
    "fileState": {"path": "index.html", "content": "<html><body>Hi</body></html>"},
}
TEXT = {"inputMode": "text", "prompt": {"text": "A pricing page", "images": [], "videos": []}}
VIDEO_CREATE = {"inputMode": "video", "prompt": {"text": "", "images": [], "videos": [VIDEO]}}

CASES: list[tuple[str, tuple[str, ...], dict[str, Any], list[str]]] = [
    ("openai-image", ("openai",), {}, [GPT_HIGH, GPT_LOW, GPT_HIGH, GPT_LOW]),
    ("anthropic-image", ("anthropic",), {}, [OPUS_MED, SONNET, OPUS_MED, SONNET]),
    ("gemini-image", ("gemini",), {}, [G3F_MIN, G31P_LOW, G3F_HIGH, G31P_HIGH]),
    ("gemini-anthropic", ("gemini", "anthropic"), {}, [G3F_MIN, G31P_LOW, OPUS_MED, G3F_HIGH]),
    ("gemini-openai", ("gemini", "openai"), {}, [G3F_MIN, G31P_LOW, GPT_HIGH, GPT_LOW]),
    ("openai-anthropic", ("openai", "anthropic"), {}, [OPUS_MED, GPT_HIGH, GPT_LOW, OPUS_MED]),
    ("openai-anthropic-update", ("openai", "anthropic"), UPDATE, [OPUS_MED, GPT_HIGH]),
    ("all-image", ("openai", "anthropic", "gemini"), {}, [OPUS_MED, GPT_LOW, G3F_HIGH, G31P_HIGH]),
    ("all-text", ("openai", "anthropic", "gemini"), TEXT, [G3F_MIN, GPT_HIGH, OPUS_HIGH, G31P_LOW]),
    ("all-update", ("openai", "anthropic", "gemini"), UPDATE, [G3F_MIN, TERRA_LOW]),
    ("all-video", ("openai", "anthropic", "gemini"), VIDEO_CREATE, [G3F_MIN, G31P_HIGH]),
]


@pytest.mark.parametrize(
    ("keys", "params", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_variant_models_frame_has_upstreams_ids(
    tmp_path: Path,
    fake_openai: FakeOpenAI,
    fake_anthropic: FakeAnthropic,
    fake_gemini: FakeGemini,
    keys: tuple[str, ...],
    params: dict[str, Any],
    expected: list[str],
) -> None:
    for _ in expected:  # one plain-text turn per variant, whichever provider runs it
        fake_openai.add_response(responses_turn([OText(["Done."])]))
        fake_anthropic.add_turn(Text.of("Done."))
        fake_gemini.add_turn(Say("Done."))
    settings = fake_providers(
        openai=fake_openai.base_url,
        anthropic=fake_anthropic.base_url,
        gemini=fake_gemini.base_url,
    )
    frame = create_params(isAssetExtractionEnabled=False, **params)
    frame.update({KEYS[k]: f"key-{k}" for k in keys})
    async with running_suite(tmp_path, agent=settings) as suite:
        result = await run_ws(suite.ws_url, frame)
    assert result.of("variantModels") == [
        {"type": "variantModels", "variantIndex": 0, "data": {"models": expected}}
    ]
    assert result.of("variantCount")[0]["value"] == str(len(expected))
    assert len(result.of("variantComplete")) == len(expected), result.of("variantError")
    assert result.close_code == 1000
