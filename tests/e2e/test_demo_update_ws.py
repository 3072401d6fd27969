"""A first run without a key: an update in the upstream UI visibly edits the page
(issue 15, item 9). Create, then update with the params the upstream UI sends (history
with the chosen option's code, fileState, optionCodes), through the gateway WebSocket."""

from __future__ import annotations

from services.agent.demo_update import note_html
from tests.suite import Suite, create_params, run_ws

ASK = "Make the header blue"


async def test_a_demo_update_edits_the_current_page(suite: Suite) -> None:
    created = await run_ws(
        suite.ws_url,
        create_params(
            inputMode="text", prompt={"text": "A bakery landing page", "images": [], "videos": []}
        ),
    )
    codes = [created.last_code(0), created.last_code(1)]
    assert all(codes)
    previous = codes[1]  # the user picked option 2

    result = await run_ws(
        suite.ws_url,
        create_params(
            generationType="update",
            inputMode="text",
            prompt={"text": ASK, "images": [], "videos": []},
            history=[
                {"role": "user", "text": "A bakery landing page", "images": [], "videos": []},
                {"role": "assistant", "text": previous, "images": [], "videos": []},
                {"role": "user", "text": ASK, "images": [], "videos": []},
            ],
            fileState={"path": "index.html", "content": previous},
            optionCodes=codes,
        ),
    )

    assert result.close_code == 1000
    assert result.frames[3]["data"] == {"models": ["demo", "demo"]}
    body = '<body class="bg-white font-sans text-slate-700 antialiased" data-demo-variant="1">'
    expected = previous.replace(body, f"{body}\n{note_html(ASK)}", 1)
    assert expected != previous
    for variant in (0, 1):
        frames = result.variant_frames(variant)
        kinds = [f["type"] for f in frames]
        [status] = result.of("status", variant)
        assert "built-in demo model" in status["value"]
        assert [f["data"]["name"] for f in result.of("toolStart", variant)] == ["edit_file"]
        [tool_result] = result.of("toolResult", variant)
        assert tool_result["data"]["ok"] is True
        # The edit's result, then the completion before variantComplete (as upstream):
        # both are the previous page plus the note, never a blank or a fresh page.
        set_codes = [f["value"] for f in result.of("setCode", variant)]
        assert set_codes == [expected, expected]
        assert kinds.index("toolStart") < kinds.index("setCode") < kinds.index("toolResult")
        assert kinds[-2:] == ["setCode", "variantComplete"]
        summary = "".join(f["value"] for f in result.of("assistant", variant))
        assert f"showing your request \u201c{ASK}\u201d; the rest of the page is unchanged" in (
            summary
        )
        assert "a real model would make this change to the page itself" in summary
