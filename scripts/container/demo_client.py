"""One demo generation through the gateway's WebSocket, for `make container-check`.

Runs inside the gateway's container (`docker exec -i GATEWAY python - URL < this file`),
so the check needs nothing on the host but the engine; it uses only what the image has.
Prints `first-code` as soon as the first `setCode` arrives (the check times a SIGTERM to
the agent by it), then one JSON line: the close code, each variant's status lines, tool
results, fidelity scores and ending, and any `error` frame. With a second argument `image`
the generation is an image create from a small screenshot drawn here (with Pillow, which
the image has) that asks for scores as the built-in UI does, so the tool workers score
each option against it.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import sys
from typing import Any

import aiohttp

PARAMS = {
    "generationType": "create",
    "inputMode": "text",
    "prompt": {"text": "A pricing page with three plans", "images": [], "videos": []},
    "generatedCodeConfig": "html_tailwind",
    "isImageGenerationEnabled": False,
    "isAssetExtractionEnabled": False,
    "isTermOfServiceAccepted": True,
}


def screenshot() -> str:
    """A small page as a PNG data URL: a dark band and two lines of text on white."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (800, 500), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 800, 80), fill="#1e3a8a")
    draw.text((40, 140), "Plans and pricing", fill="#111827", font_size=40)
    draw.text((40, 220), "Start free, upgrade when you grow", fill="#374151", font_size=28)
    out = io.BytesIO()
    image.save(out, "PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode("ascii")


async def generate(url: str, params: dict[str, Any]) -> dict[str, Any]:
    variants: dict[int, dict[str, Any]] = {}
    errors: list[str] = []
    first_code = False

    def variant(frame: dict[str, Any]) -> dict[str, Any]:
        index = int(frame.get("variantIndex", 0))
        return variants.setdefault(index, {"status": [], "tools": [], "fidelity": [], "end": None})

    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        async with session.ws_connect(url, max_msg_size=0) as ws:
            await ws.send_str(json.dumps(params))
            async for message in ws:
                if message.type != aiohttp.WSMsgType.TEXT:
                    continue
                frame = json.loads(message.data)
                kind = frame.get("type")
                if kind == "setCode" and not first_code:
                    first_code = True
                    print("first-code", flush=True)
                elif kind == "status":
                    variant(frame)["status"].append(frame["value"])
                elif kind == "toolResult":
                    data = frame["data"]
                    variant(frame)["tools"].append([data["name"], data["ok"]])
                elif kind == "fidelity":
                    variant(frame)["fidelity"].append(frame["data"])
                elif kind in ("variantComplete", "variantError"):
                    variant(frame)["end"] = [kind, frame.get("value", "")]
                elif kind == "error":
                    errors.append(frame.get("value", ""))
            close = ws.close_code
    return {"close": close, "variants": variants, "errors": errors}


def main() -> int:
    url = sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:7001/generate-code"
    params = dict(PARAMS)
    if sys.argv[2:] == ["image"]:
        params["inputMode"] = "image"
        params["prompt"] = {"text": "", "images": [screenshot()], "videos": []}
        # As the built-in UI asks: an upstream-protocol socket gets no scores.
        params["scoreFidelity"] = True
    summary = asyncio.run(generate(url, params))
    print(json.dumps(summary, sort_keys=True), flush=True)
    return 0 if summary["close"] == 1000 else 1


if __name__ == "__main__":
    sys.exit(main())
