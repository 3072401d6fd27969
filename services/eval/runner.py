"""Runs a reference set through the suite's agent, renders each result and scores it.

Each item × model is one `GenerateCode` call, the call a user's generation makes: the
reference's screenshot as the image, one variant pinned to the model, the agent's tools as
configured. Items run one after the other (a model server is usually the bottleneck, and
one at a time keeps each item's time its own). After every item `results.json` and
`report.html` are rewritten, so an interrupted run leaves a valid partial report and the
next run picks up where it stopped.
"""

from __future__ import annotations

import asyncio
import base64
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import grpc
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.cli_generate import GenerationView
from services.common.errors import bad_request_violations
from services.common.grpc_server import CHANNEL_OPTIONS
from services.common.proto_enums import enum_values
from services.common.security import GrpcSecurity, create_channel
from services.common.vendor import DEFAULT_VENDOR_DIR, VendorCatalog, VendorError
from services.eval.render import Renderer, RenderError, Rendering, renderer
from services.eval.report import write_report
from services.eval.results import ACCESSIBILITY, ItemResult, Results, slug, write_atomic
from services.eval.sets import Reference, ReferenceSet
from services.eval.stack import DEFAULT_STACK
from services.fidelity.metrics import score
from services.fidelity.ocr import OcrError, OcrPage, ocr_page, tesseract_available
from services.fidelity.score import score_png


class EvalAborted(Exception):
    """The eval cannot go on (agent unreachable, a model id it refuses…); says why."""


@dataclass(frozen=True, slots=True)
class EvalOptions:
    reference_set: ReferenceSet
    models: tuple[str, ...]
    out: Path
    agent: str
    security: GrpcSecurity
    stack: str = DEFAULT_STACK
    timeout_s: float = 600.0
    vendor_dir: Path = DEFAULT_VENDOR_DIR


class Progress(Protocol):
    def start(self, total: int, done: int) -> None: ...

    def working(self, item: str, model: str) -> None: ...

    def finished(self, item: str, model: str, result: ItemResult) -> None: ...


def prepare(options: EvalOptions) -> Results:
    """The results file, resumed when it exists, listing this run's set and models."""
    results = Results.open(options.out / "results.json")
    results.set_name = options.reference_set.name
    results.stack = options.stack
    # Models of earlier runs stay in the report; this run's are added after them.
    results.models = [*results.models, *(m for m in options.models if m not in results.models)]
    results.items = [
        {
            "id": ref.id,
            "kind": ref.kind,
            "html": ref.is_html,
            "viewport": {"width": ref.viewport.width, "height": ref.viewport.height},
            "reference": f"refs/{ref.id}.png",
            # A PNG reference's block metrics come from OCR, when Tesseract is installed.
            "ocr": not ref.is_html and tesseract_available(),
        }
        for ref in options.reference_set.items
    ]
    return results


async def run_eval(options: EvalOptions, results: Results, progress: Progress) -> None:
    """Every pending item × model, in order; raises EvalAborted when it cannot go on.
    Cancelling it (Ctrl-C) leaves results.json and report.html as of the last item."""
    out = options.out
    refs = options.reference_set.items
    digests = {ref.id: ref.digest() for ref in refs}
    pending = [
        (ref, model)
        for ref in refs
        for model in options.models
        if not results.done(ref.id, model, digests[ref.id])
    ]
    progress.start(len(refs) * len(options.models), len(refs) * len(options.models) - len(pending))
    results.save()
    write_report(results, out)
    if not pending:
        return
    try:
        vendor = VendorCatalog.load(options.vendor_dir)
    except VendorError as exc:
        if options.stack != "html_css":
            raise EvalAborted(
                f"{options.stack} pages load their runtime from CDNs, and eval renders them "
                f"from the local copies, which are unavailable: {exc} "
                "(or score --stack html_css)"
            ) from None
        vendor = None
    channel = create_channel(options.agent, options.security, CHANNEL_OPTIONS)
    async with channel, renderer(vendor) as chromium:
        stub = pb_grpc.AgentServiceStub(channel)
        rendered: dict[str, Rendering] = {}
        for ref, model in pending:
            progress.working(ref.id, model)
            if ref.id not in rendered:
                rendered[ref.id] = await render_reference(chromium, ref, out)
                _note_ocr(results, ref, rendered[ref.id])
            result = await _one(stub, chromium, ref, rendered[ref.id], model, options)
            result.digest = digests[ref.id]
            results.put(ref.id, model, result)
            results.save()
            write_report(results, out)
            progress.finished(ref.id, model, result)


async def render_reference(chromium: Renderer, ref: Reference, out: Path) -> Rendering:
    if ref.is_html:
        try:
            result = await chromium.render(ref.path.read_text(encoding="utf-8"), ref.viewport)
        except RenderError as exc:
            raise EvalAborted(f"the reference {ref.path} does not render: {exc}") from None
    else:
        png = ref.path.read_bytes()
        ocr: OcrPage | None = None
        if tesseract_available():
            try:
                ocr = await asyncio.to_thread(ocr_page, png)
            except OcrError as exc:
                raise EvalAborted(f"the reference {ref.path} cannot be read: {exc}") from None
        result = Rendering(png, None, ocr=ocr)
    write_atomic(out / "refs" / f"{ref.id}.png", result.png)
    return result


def _note_ocr(results: Results, ref: Reference, reference: Rendering) -> None:
    """The OCR blocks of a PNG reference go in the item, for the report's overlay."""
    if reference.ocr is None:
        return
    for item in results.items:
        if item["id"] == ref.id:
            item["ocr_blocks"] = [
                {"text": b.text, "x": b.x, "y": b.y, "w": b.w, "h": b.h}
                for b in reference.ocr.page.blocks
            ]
            item["size"] = {"width": reference.ocr.page.width, "height": reference.ocr.page.height}


def build_request(png: bytes, model: str, stack: str) -> pb.GenerateCodeRequest:
    # No generation_id: the agent mints one (an id of its own shape naming another
    # agent is refused), and the first event carries it into the view.
    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_CREATE,
        input_mode=pb.INPUT_MODE_IMAGE,
        stack=enum_values(pb.Stack)[stack],
        variant_count=1,
        models=[model],
    )
    request.prompt.images.append("data:image/png;base64," + base64.b64encode(png).decode("ascii"))
    return request


async def generate(
    stub: pb_grpc.AgentServiceAsyncStub,
    request: pb.GenerateCodeRequest,
    timeout_s: float,
    agent: str,
) -> GenerationView:
    """The generation's events applied to a view; EvalAborted when the agent cannot be
    used at all (unreachable, the request refused), since every further item would fail
    the same way."""
    view = GenerationView(generation_id=request.generation_id)
    call = stub.GenerateCode(request, timeout=timeout_s)
    try:
        async for response in call:
            for event in response.events:
                view.apply(event)
    except grpc.aio.AioRpcError as exc:
        code = exc.code()
        if code == grpc.StatusCode.UNAVAILABLE:
            raise EvalAborted(
                f"cannot reach the agent at {agent} ({exc.details()}); start the suite with "
                "`s2c up` or point --agent at it"
            ) from None
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            detail = "; ".join(f"{v.field}: {v.description}" for v in bad_request_violations(exc))
            raise EvalAborted(f"the agent refused the request: {detail or exc.details()}") from None
        if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
            raise EvalAborted(f"the agent refused the call: {exc.details()}") from None
        view.error = f"{code.name}: {exc.details()}"
        view.stop_running("failed")
    finally:
        call.cancel()  # a no-op once the stream ended; stops the generation when we did
    view.stop_running("interrupted")
    return view


async def _one(
    stub: pb_grpc.AgentServiceAsyncStub,
    chromium: Renderer,
    ref: Reference,
    reference: Rendering,
    model: str,
    options: EvalOptions,
) -> ItemResult:
    started = time.monotonic()
    request = build_request(reference.png, model, options.stack)
    view = await generate(stub, request, options.timeout_s, options.agent)
    result = ItemResult(status="failed", generation_id=view.generation_id)
    variant = view.variants[0] if view.variants else None
    if variant is not None:
        result.input_tokens = variant.usage.input_tokens
        result.output_tokens = variant.usage.output_tokens
        result.cost_usd = variant.usage.cost_usd
    if variant is None or variant.state != "completed" or not variant.code.strip():
        reason = variant.note if variant is not None and variant.state == "failed" else ""
        result.error = reason or view.error or f"the generation ended {view.outcome}, no code"
        result.seconds = time.monotonic() - started
        return result
    name = slug(model)
    result.code = f"renders/{ref.id}/{name}.html"
    write_atomic(options.out / result.code, variant.code)
    try:
        rendering = await chromium.render(variant.code, ref.viewport, accessibility=True)
    except RenderError as exc:
        result.error = f"the generated page does not render: {exc}"
        result.seconds = time.monotonic() - started
        return result
    result.render = f"renders/{ref.id}/{name}.png"
    write_atomic(options.out / result.render, rendering.png)
    if reference.ocr is not None:
        scores = score_png(reference.ocr, reference.png, rendering.words, rendering.png).scores
    else:
        scores = score(reference.page, reference.png, rendering.page, rendering.png)
    check = rendering.accessibility
    result.scores = {**scores.as_dict(), ACCESSIBILITY: check.score if check else None}
    result.status = "ok"
    result.seconds = time.monotonic() - started
    return result
