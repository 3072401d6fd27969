"""What a live fidelity score costs, and what the image path costs around it (issue 36).

Table 1: CPU of one score of a 1280×800 screenshot — this process, Tesseract and the
browser (Chromium and Playwright's driver, every process under this one) — through the
tool worker's FidelityScorer. The baseline, measured in the same run, is a scorer that
keeps nothing (a fresh one per score): the screenshot decoded and read by OCR again, the
page rendered again, as before the scorer kept readings and scores. Then with the
screenshot already read, for an option whose page differs and for one identical to a page
already scored; and for a generation of four options, identical or all different.

Table 2: bytes of one ExecuteToolRequest at 1 and 4 input images of 2 MB: the images as
data URLs in every call (the `input_images` field the agent sent before), against named by
hash (`images`), and the one call per worker that lacks them (its bytes sent again).

Table 3: decodes and parses per image per generation: the agent's data-URL parses (plan,
then four provider sessions and four options' tool calls) and the scorer's decodes of the
screenshot for four options scored in two rounds, against a scorer that keeps nothing.

Table 4: how long a socket stays open after its last `variantComplete`, for an image
create of four options on the whole suite (a fake model, the real tool worker): the
upstream UI's socket, not scored; the same with the operator scoring it anyway
(S2C_SCORE_UNASKED); and our UI's, which asks for the scores and waits for them (what
every socket did before).

Run alone: PYTHONPATH=. .venv/bin/python bench/score_cost.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import cProfile
import io
import json
import os
import pstats
import resource
import statistics
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from PIL import Image, PngImagePlugin
from s2c.tools.v1 import tool_service_pb2 as pb

from services.agent.domain import GenerationRequest, Prompt
from services.agent.planning import Planner
from services.agent.providers import anthropic, base
from services.agent.settings import AgentSettings
from services.agent.tool_client import GrpcToolExecutor
from services.agent.tooling import ToolContext
from services.common.images import ImageDecoder, ImageLimits
from services.common.input_images import InputImage
from services.common.tool_types import ToolCall
from services.eval.sets import load_set
from services.tools.fidelity import FidelityScorer
from services.tools.screenshot import ScreenshotSettings, Screenshotter

CHROMIUM = "/usr/bin/chromium"
CLK_TCK = os.sysconf("SC_CLK_TCK")
IMAGE_BYTES = 2 << 20
OPTIONS = 4  # an image create's default


def tree_cpu_s() -> float:
    """CPU seconds of this process, its reaped children (Tesseract) and every live process
    under it (the browser), read from /proc."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(name)] = int(fields[1])
        times[int(name)] = sum(int(v) for v in fields[11:15]) / CLK_TCK
    mine = {os.getpid()}
    grew = True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in mine} - mine
        grew = bool(found)
        mine |= found
    return total + sum(times[pid] for pid in mine if pid != os.getpid())


async def cpu_of(run: Awaitable[Any]) -> float:
    start = tree_cpu_s()
    await run
    return tree_cpu_s() - start


def variant(html: str, n: int) -> str:
    """The page with one word changed: another option's page, never a kept score."""
    return html.replace("</body>", f"<p>Option {n}</p></body>", 1)


class _Unkept(Screenshotter):
    """The baseline's browser: a fresh context for every render, as before pages were kept
    for a screenshot's renders (score_pages.py)."""

    async def render_for_score(
        self, html: str, width: int, height: int, expression: str, **kw: Any
    ) -> tuple[bytes, Any]:
        kw.pop("keep_for", None)
        return await super().render_for_score(html, width, height, expression, **kw)


def another_copy(png: bytes, n: int) -> InputImage:
    """The same screenshot saved again (other bytes, another hash): one never seen."""
    with Image.open(io.BytesIO(png)) as opened:
        out = io.BytesIO()
        opened.save(out, "PNG", compress_level=1 + n % 9, pnginfo=_note(n))
    return InputImage.of("image/png", out.getvalue())


def _note(n: int) -> PngImagePlugin.PngInfo:
    info = PngImagePlugin.PngInfo()
    info.add_text("copy", str(n))
    return info


async def score_cpu(runs: int) -> None:
    ref = next(r for r in load_set("basic").items if r.id == "landing")
    html = ref.path.read_text(encoding="utf-8")
    settings = ScreenshotSettings(chromium_path=CHROMIUM)
    shooter, unkept = Screenshotter(settings), _Unkept(settings)
    try:
        png, _ = await shooter.render_for_score(html, 1280, 800, "() => 0", timeout_s=30)
        await unkept.render_for_score(html, 1280, 800, "() => 0", timeout_s=30)
        image = InputImage.of("image/png", png)

        def scorer(browser: Screenshotter) -> FidelityScorer:
            return FidelityScorer(browser, ImageDecoder(ImageLimits()))

        async def score(s: FidelityScorer, page: str, against: InputImage = image) -> None:
            outcome = await s.score(page, against, image_index=0, width=0, timeout_s=30)
            assert outcome.scores is not None, outcome.unavailable_reason

        base = [await cpu_of(score(scorer(unkept), variant(html, n))) for n in range(runs)]
        first = [
            await cpu_of(score(scorer(shooter), variant(html, n), another_copy(png, n)))
            for n in range(runs)
        ]
        kept = scorer(shooter)
        await score(kept, html)
        other = [await cpu_of(score(kept, variant(html, 100 + n))) for n in range(runs)]
        same = [await cpu_of(score(kept, html)) for _ in range(runs)]

        async def options(pages: list[str], keep: bool, against: InputImage) -> None:
            shared = scorer(shooter)
            scorers = [shared if keep else scorer(unkept) for _ in pages]
            await asyncio.gather(
                *(score(s, p, against) for s, p in zip(scorers, pages, strict=True))
            )

        four_same = [variant(html, 200)] * 4
        four_other = [variant(html, 300 + n) for n in range(4)]
        base4_same = await cpu_of(options(four_same, False, image))
        new4_same = await cpu_of(options(four_same, True, another_copy(png, 50)))
        base4_other = await cpu_of(options(four_other, False, image))
        new4_other = await cpu_of(options(four_other, True, another_copy(png, 51)))
    finally:
        await shooter.close()
        await unkept.close()
    base1 = statistics.median(base)
    print(f"CPU of a score, 1280x800 screenshot (worker + Tesseract + browser; median of {runs})")
    print(f"{'case':55} {'cpu s':>6} {'vs keeping nothing':>19}")
    rows = [
        ("one score, keeping nothing (baseline)", base1, base1),
        ("first score against a screenshot (OCR, new page)", statistics.median(first), base1),
        ("another option's page, screenshot already read", statistics.median(other), base1),
        ("an identical page, already scored", statistics.median(same), base1),
        ("4 identical options, keeping nothing (baseline)", base4_same, base4_same),
        ("4 identical options, new screenshot, one scorer", new4_same, base4_same),
        ("4 different options, keeping nothing (baseline)", base4_other, base4_other),
        ("4 different options, new screenshot, one scorer", new4_other, base4_other),
    ]
    for case, cpu, against in rows:
        print(f"{case:55} {cpu:6.2f} {cpu / max(against, 1e-9):18.2f}x")
    print()


class _Recorder:
    """Stands in for the tool service: records each request's size; answers the first
    call naming images it has not seen as a worker that lacks them does."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.held: set[str] = set()

    async def ExecuteTool(self, request: pb.ExecuteToolRequest, **_: Any) -> Any:
        self.sizes.append(request.ByteSize())
        self.held |= {i.sha256 for i in request.context.images if i.data}
        missing = [i.sha256 for i in request.context.images if i.sha256 not in self.held]
        if missing:
            raise _not_held(missing)
        return pb.ExecuteToolResponse(ok=True)


def _not_held(digests: list[str]) -> Exception:
    import grpc
    from google.rpc import error_details_pb2, status_pb2

    from services.common.input_images import NOT_HELD_DOMAIN, NOT_HELD_REASON

    info = error_details_pb2.ErrorInfo(
        reason=NOT_HELD_REASON, domain=NOT_HELD_DOMAIN, metadata={"sha256": ",".join(digests)}
    )
    detail = status_pb2.Status(
        code=grpc.StatusCode.FAILED_PRECONDITION.value[0], message="not held"
    )
    detail.details.add().Pack(info)
    metadata = grpc.aio.Metadata(
        ("grpc-status-details-bin", detail.SerializeToString()),
    )
    return grpc.aio.AioRpcError(
        grpc.StatusCode.FAILED_PRECONDITION, grpc.aio.Metadata(), metadata, "not held"
    )


async def call_bytes() -> None:
    print("Bytes of one ExecuteToolRequest (create_file of a 4 KB page)")
    head = f"{'images':>6} {'data URLs':>11} {'by hash':>9} {'ratio':>7}"
    print(f"{head} {'first call to a worker':>23}")
    call = ToolCall("call_1", "create_file", {"path": "index.html", "content": "x" * 4096})
    for count in (1, 4):
        images = tuple(InputImage.of("image/png", os.urandom(IMAGE_BYTES)) for _ in range(count))
        urls = ["data:image/png;base64," + base64.b64encode(i.data).decode() for i in images]
        before = pb.ExecuteToolRequest(
            call=pb.ToolCall(id=call.id, name=call.name),
            context=pb.ToolContext(input_images=urls),
        )
        before.call.arguments.update(call.arguments)
        executor = GrpcToolExecutor("127.0.0.1:9")
        recorder = _Recorder()
        executor._stub = recorder  # type: ignore[assignment]
        try:
            await executor.execute(call, None, ToolContext(input_images=images))  # miss, resend
            first = sum(recorder.sizes)
            recorder.sizes.clear()
            await executor.execute(call, None, ToolContext(input_images=images))
        finally:
            await executor.close()
        after = recorder.sizes[0]
        print(
            f"{count:6} {before.ByteSize():11} {after:9} "
            f"{after / before.ByteSize():6.4f}x {first:23}"
        )
    print()


def decode_counts(scorer_decodes: dict[str, int]) -> None:
    """Parses in the agent: one plan, then four sessions' prompts as Anthropic builds them
    (calls of the one data-URL parser, counted by the profiler: nothing is patched)."""
    url = "data:image/png;base64," + base64.b64encode(os.urandom(1024)).decode()
    request = GenerationRequest("g", prompt=Prompt(images=(url,)), score_fidelity=True)
    profile = cProfile.Profile()
    profile.enable()
    plan = Planner(AgentSettings()).plan(request)
    for _ in range(4):
        config = base.SessionConfig(
            provider=base.ProviderName("Anthropic", "ANTHROPIC_API_KEY"),
            model_id="m",
            api_name="m",
            effort=None,
            api_key="k",
            base_url=None,
            messages=(base.PromptMessage("system", "s"), base.PromptMessage("user", "", (url,))),
            tools=(),
            prepared=plan.images_by_url(),
        )
        anthropic.AnthropicSession(config)
    profile.disable()
    stats = pstats.Stats(profile)
    parses = sum(
        calls
        for (path, _, name), (calls, *_) in stats.stats.items()  # type: ignore[attr-defined]
        if name == "parse_data_url"
    )
    print("Per input image, per generation of 4 options")
    print(f"{'what':50} {'count':>5}")
    print(f"{'data-URL parses in the agent (plan + 4 sessions)':50} {parses:5}")
    for case, count in scorer_decodes.items():
        print(f"{case:50} {count:5}")


async def scorer_decodes() -> dict[str, int]:
    """Decodes of the screenshot for 4 options scored in 2 rounds (8 scores)."""
    ref = next(r for r in load_set("basic").items if r.id == "pricing")
    html = ref.path.read_text(encoding="utf-8")
    shooter = Screenshotter(ScreenshotSettings(chromium_path=CHROMIUM))
    counts: dict[str, int] = {}
    try:
        png, _ = await shooter.render_for_score(html, 1280, 800, "() => 0", timeout_s=30)
        image = InputImage.of("image/png", png)
        for case, keep in (
            ("screenshot decodes, keeping nothing", False),
            ("screenshot decodes, one scorer", True),
        ):
            decoder = _CountingDecoder(ImageLimits())
            shared = FidelityScorer(shooter, decoder)
            for round_ in range(2):
                scorers = [shared if keep else FidelityScorer(shooter, decoder) for _ in range(4)]
                await asyncio.gather(
                    *(
                        s.score(
                            variant(html, 10 * round_ + n),
                            image,
                            image_index=0,
                            width=0,
                            timeout_s=30,
                        )
                        for n, s in enumerate(scorers)
                    )
                )
            counts[case] = decoder.opened
    finally:
        await shooter.close()
    return counts


class _CountingDecoder(ImageDecoder):
    opened = 0

    def open(self, *args: Any, **kwargs: Any) -> Any:
        self.opened += 1
        return super().open(*args, **kwargs)


def _page(text: str) -> str:
    return (
        "<!doctype html><html><body style='font-family:sans-serif;padding:40px'>"
        f"<h1>Fresh bread every morning</h1><p>{text}</p><button>Order now</button>"
        "</body></html>"
    )


async def close_delays(runs: int) -> None:
    from dataclasses import replace

    from services.gateway.settings import GatewaySettings
    from services.tools.settings import ToolsSettings
    from tests.fakes.openai_server import FakeOpenAI, FunctionCall, Text, chat_turn
    from tests.suite import create_params, local_model, running_suite

    print(f"Seconds from the last variantComplete to the close, image create of {OPTIONS} options")
    print(f"{'socket':52} {'after last':>10} {'whole':>6}")
    async with FakeOpenAI() as fake:
        agent = local_model(
            fake.base_url,
            # Scores only: a refinement round would be a model turn before variantComplete.
            refine_rounds=0,
        )
        tools = ToolsSettings(screenshots_enabled=True, chromium_path=CHROMIUM)
        plain = GatewaySettings()
        access = replace(
            plain.access, max_concurrent_per_client=0, starts_per_minute=0, max_waiting_per_client=0
        )
        for operator in (False, True):
            gateway = replace(plain, access=access, score_unasked=operator)
            async with running_suite(
                Path(tempfile.mkdtemp()), agent=agent, tools=tools, gateway=gateway
            ) as suite:
                shooter = suite.tools.worker.screenshotter
                assert shooter is not None
                cases = (
                    [("upstream UI, scored by the operator", False)]
                    if operator
                    else [
                        ("upstream UI", False),
                        ("our UI, waits for its scores (every socket before)", True),
                    ]
                )
                for name, asks in cases:
                    after, whole = [], []
                    for n in range(runs):
                        shot, _ = await shooter.render_for_score(
                            _page(f"run {name} {n}"), 1280, 800, "() => 0", timeout_s=30
                        )
                        url = "data:image/png;base64," + base64.b64encode(shot).decode()
                        for option in range(OPTIONS):
                            arguments = json.dumps(
                                {"path": "index.html", "content": _page(f"{name} {n} {option}")}
                            )
                            fake.add_chat(
                                chat_turn([FunctionCall("c1", "create_file", arguments, pieces=1)])
                            )
                        fake.add_chat(*[chat_turn([Text(["Built it."])])] * OPTIONS)
                        prompt = {"text": "", "images": [url], "videos": []}
                        params = create_params(generatedCodeConfig="html_css", prompt=prompt)
                        params["models"] = ["local:tiny"] * OPTIONS
                        if asks:
                            params["scoreFidelity"] = True
                        last, start, closed = await _timed_socket(suite.ws_url, params)
                        assert last, "no variantComplete: the scripted model did not line up"
                        after.append(closed - last)
                        whole.append(closed - start)
                    middle = statistics.median(after), statistics.median(whole)
                    print(f"{name:52} {middle[0]:10.2f} {middle[1]:6.2f}")
    print()


async def _timed_socket(url: str, params: dict[str, Any]) -> tuple[float, float, float]:
    """When the last variantComplete arrived, the socket opened and it closed."""
    import aiohttp

    last = 0.0
    async with aiohttp.ClientSession() as session:
        start = time.perf_counter()
        async with session.ws_connect(url, max_msg_size=0) as ws:
            await ws.send_str(json.dumps(params))
            async for message in ws:
                text = message.type == aiohttp.WSMsgType.TEXT
                if text and json.loads(message.data)["type"] == "variantComplete":
                    last = time.perf_counter()
        return last, start, time.perf_counter()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    await close_delays(args.runs)
    await score_cpu(args.runs)
    await call_bytes()
    decode_counts(await scorer_decodes())


if __name__ == "__main__":
    asyncio.run(main())
