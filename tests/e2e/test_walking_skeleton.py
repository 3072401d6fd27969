"""The thinnest whole path: browser params → gateway → agent (demo model) → tools → frames."""

from __future__ import annotations

from tests.suite import Suite, create_params, run_ws


async def test_create_from_image_streams_every_frame_in_order(suite: Suite) -> None:
    result = await run_ws(suite.ws_url, create_params())

    assert result.close_code == 1000
    kinds = [f["type"] for f in result.frames]
    assert kinds[:3] == ["variantCount", "status", "status"]
    assert result.frames[0] == {"type": "variantCount", "variantIndex": 0, "value": "2"}
    assert kinds[3] == "variantModels"
    assert result.frames[3]["data"] == {"models": ["demo", "demo"]}
    for variant in (0, 1):
        frames = result.variant_frames(variant)
        order = [f["type"] for f in frames]
        create = order.index("toolStart")
        assert frames[create]["data"]["name"] == "create_file"
        first_result = order.index("toolResult")
        assert "setCode" in order[create:first_result]
        assert frames[first_result]["data"]["name"] == "create_file"
        assert frames[first_result]["data"]["ok"] is True
        assert frames[first_result]["eventId"] == frames[create]["eventId"]
        tools = [f["data"]["name"] for f in frames if f["type"] == "toolResult"]
        assert tools == ["create_file", "edit_file"]
        assert all(f["data"]["ok"] for f in frames if f["type"] == "toolResult")
        assert order[-1] == "variantComplete"
        assert order[-2] == "setCode"
        final = result.last_code(variant)
        assert final.startswith("<!DOCTYPE html>")
        assert final.rstrip().endswith("</html>")
        assert f'data-demo-variant="{variant}"' in final
        # The edit the demo made is in the final code, and the live preview grew to it.
        edit_result = next(
            f for f in frames if f["type"] == "toolResult" and f["data"]["name"] == "edit_file"
        )
        assert edit_result["data"]["output"]["edits"][0]["replaced"] == 1
        assert edit_result["data"]["output"]["edits"][0]["new_text"][:20] in final
        assert any(f["type"] == "thinking" for f in frames)
        assert any(f["type"] == "assistant" for f in frames)
        for f in frames:
            if f["type"] in ("thinking", "assistant"):
                assert f["eventId"].startswith(f"{f['type']}-{variant}-")


async def test_invalid_stack_gets_the_upstream_error_and_4332(suite: Suite) -> None:
    result = await run_ws(suite.ws_url, create_params(generatedCodeConfig="cobol"))
    assert result.frames == [{"type": "error", "value": "Invalid generated code config: cobol"}]
    assert result.close_code == 4332


async def test_invalid_input_mode_and_generation_type(suite: Suite) -> None:
    mode = await run_ws(suite.ws_url, create_params(inputMode="audio"))
    kind = await run_ws(suite.ws_url, create_params(generationType="delete"))
    not_json = await run_ws(suite.ws_url, None, raw="{not json")
    assert mode.frames == [{"type": "error", "value": "Invalid input mode: audio"}]
    assert kind.frames == [{"type": "error", "value": "Invalid generation type: delete"}]
    assert not_json.frames[0]["type"] == "error"
    assert not_json.frames[0]["value"].startswith("Invalid params: not valid JSON")
    assert {mode.close_code, kind.close_code, not_json.close_code} == {4332}


async def test_update_without_history_or_file_fails_after_variant_count(suite: Suite) -> None:
    result = await run_ws(suite.ws_url, create_params(generationType="update"))
    assert result.frames[0]["type"] == "variantCount"
    assert result.frames[-1]["type"] == "error"
    assert "Update requests require history or fileState.content" in result.frames[-1]["value"]
    assert result.close_code == 4332
