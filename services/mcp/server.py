"""The MCP server: five tools and the generated files as resources, each a thin adapter
over one or two calls to the agent's gRPC API (`services/mcp/__init__.py`)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Annotated, Any, Literal, Protocol

import grpc
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import Field
from s2c.agent.v1 import agent_service_pb2 as pb

from services.mcp.agents import AgentRoute
from services.mcp.arguments import (
    Models,
    Options,
    Screenshot,
    Stack,
    Stacks,
    create_request,
    image_url,
    update_request,
)
from services.mcp.results import URI_TEMPLATE, file_from_record, generation_result
from services.mcp.run import rpc_error_text, run_generation
from services.mcp.settings import McpSettings

INSTRUCTIONS = (
    "Screenshot-to-code: generate_page turns screenshots, a URL or a text prompt into web "
    "pages (several options, each with its files, cost and fidelity score); update_page "
    "changes one option; the files are resources s2c://generations/{id}/{option}/{path}."
)
GenerationId = Annotated[
    str,
    Field(min_length=1, max_length=64, description="A generation id from generate_page."),
]
OptionIndex = Annotated[int, Field(ge=0, le=63, description="0-based option index.")]


class Admission(Protocol):
    """Per-client limits (the gateway's) on running generations and URL captures; each
    raises ToolError saying why a call may not start now. `request` is the HTTP request
    the call came in on (None over stdio)."""

    def admit(self, request: object | None) -> AbstractContextManager[None]: ...

    def admit_capture(self, request: object | None) -> AbstractContextManager[None]: ...


class Tools:
    """The tools' bodies; `build_server` registers them."""

    def __init__(
        self, settings: McpSettings, route: AgentRoute, admission: Admission | None
    ) -> None:
        self._settings = settings
        self._route = route
        self._admission = admission

    def _admit(
        self, ctx: Context[Any, Any], *, capture: bool = False
    ) -> AbstractContextManager[None]:
        if self._admission is None:
            return nullcontext()
        request = ctx.request_context.request
        if capture:
            return self._admission.admit_capture(request)
        return self._admission.admit(request)

    async def generate_page(
        self,
        ctx: Context[Any, Any],
        prompt: Annotated[
            str,
            Field(
                description="What to build (alone: a page from text), or extra instructions "
                "for the screenshots."
            ),
        ] = "",
        screenshots: Annotated[
            list[Screenshot],
            Field(max_length=20, description="Screenshots of the page(s) to rebuild."),
        ] = [],  # noqa: B006 - pydantic copies defaults
        url: Annotated[
            str,
            Field(description="A public http(s) page to capture and rebuild, as a screenshot."),
        ] = "",
        stack: Stacks = "html_tailwind",
        options: Options = 1,
        models: Models = [],  # noqa: B006
    ) -> CallToolResult:
        images: list[tuple[str, Screenshot | None]] = [
            (image_url(shot, i, self._settings.read_files), shot)
            for i, shot in enumerate(screenshots)
        ]
        if url:
            capture = await self._capture(ctx, url, pb.CAPTURE_DEVICE_DESKTOP)
            data = base64.b64encode(capture.image).decode("ascii")
            images.append((f"data:{capture.mime_type};base64,{data}", None))
        request = create_request(
            prompt=prompt, stack=stack, options=options, models=models, images=images
        )
        return await self._generate(ctx, request)

    async def update_page(
        self,
        ctx: Context[Any, Any],
        generation_id: GenerationId,
        instruction: Annotated[str, Field(description="What to change.")],
        option: OptionIndex = 0,
        selected_element: Annotated[
            str, Field(description="Optional HTML of the element the change is about.")
        ] = "",
        stack: Annotated[
            Stack,
            Field(description="The stack the page was generated with (default HTML + Tailwind)."),
        ] = "html_tailwind",
        options: Options = 1,
    ) -> CallToolResult:
        record = await self._record(generation_id)
        request = update_request(record, option, instruction, selected_element, stack, options)
        return await self._generate(ctx, request)

    async def capture_url(
        self,
        ctx: Context[Any, Any],
        url: Annotated[str, Field(description="A public http(s) page.")],
        device: Annotated[
            Literal["desktop", "mobile"], Field(description="Viewport: 1280 px or a 390 px phone.")
        ] = "desktop",
    ) -> CallToolResult:
        kind = pb.CAPTURE_DEVICE_MOBILE if device == "mobile" else pb.CAPTURE_DEVICE_DESKTOP
        capture = await self._capture(ctx, url, kind)
        facts = {
            "final_url": capture.final_url,
            "width": capture.width,
            "height": capture.height,
            "truncated": capture.truncated,
            "http_status": capture.http_status,
        }
        data = base64.b64encode(capture.image).decode("ascii")
        return CallToolResult(
            content=[
                ImageContent(type="image", data=data, mime_type=capture.mime_type),
                TextContent(type="text", text=json.dumps(facts)),
            ],
            structured_content=facts,
        )

    async def list_models(self) -> CallToolResult:
        try:
            answer = await self._route.in_turn()[0].ListModels(
                pb.ListModelsRequest(), timeout=self._settings.call_timeout_s
            )
        except grpc.aio.AioRpcError as exc:
            raise ToolError(rpc_error_text(exc)) from None
        fields = ("id", "provider", "available", "vision", "tools", "video")
        models = [{f: getattr(m, f) for f in fields} for m in answer.models]
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(models))],
            structured_content={"models": models},
        )

    async def get_generation(
        self,
        generation_id: GenerationId,
        with_files: Annotated[
            bool, Field(description="Embed every file's content, not only its resource URI.")
        ] = False,
    ) -> CallToolResult:
        record = await self._record(generation_id)
        return generation_result(record, {}, with_files=with_files, ran=False)

    async def read_file(self, generation_id: str, option: str, path: str) -> str:
        try:
            record = await self._record(generation_id)
        except ToolError as exc:
            raise ResourceError(str(exc)) from None
        return file_from_record(record, option, path)

    async def _generate(
        self, ctx: Context[Any, Any], request: pb.GenerateCodeRequest
    ) -> CallToolResult:
        steps = 0

        async def report(message: str) -> None:
            nonlocal steps
            steps += 1
            await ctx.report_progress(steps, None, message)

        with self._admit(ctx):
            finished = await run_generation(self._route.in_turn(), request, report)
        record = await self._record(finished.generation_id)
        return generation_result(record, finished.previews, with_files=True, ran=True)

    async def _record(self, generation_id: str) -> pb.Generation:
        try:
            stub = await self._route.owner(generation_id)
        except ValueError as exc:
            raise ToolError(f"generation_id: {exc}") from None
        try:
            answer = await stub.GetGeneration(
                pb.GetGenerationRequest(generation_id=generation_id),
                timeout=self._settings.call_timeout_s,
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.NOT_FOUND:
                raise ToolError(f"generation_id: no generation {generation_id[:80]!r}") from None
            raise ToolError(rpc_error_text(exc)) from None
        return answer.generation

    async def _capture(
        self, ctx: Context[Any, Any], url: str, device: int
    ) -> pb.CaptureUrlResponse:
        if not url.startswith(("http://", "https://")):
            raise ToolError("url: an absolute http(s) URL")
        try:
            with self._admit(ctx, capture=True):
                return await self._route.in_turn()[0].CaptureUrl(
                    pb.CaptureUrlRequest(url=url, device=device),  # type: ignore[arg-type]
                    timeout=self._settings.call_timeout_s * 3,
                )
        except grpc.aio.AioRpcError as exc:
            raise ToolError(f"url: the capture failed: {rpc_error_text(exc)}") from None


def build_server(
    settings: McpSettings, route: AgentRoute, admission: Admission | None = None
) -> MCPServer[Any]:
    tools = Tools(settings, route, admission)
    server: MCPServer[Any] = MCPServer("s2c", instructions=INSTRUCTIONS)
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    register: list[tuple[Callable[..., Any], str, ToolAnnotations | None]] = [
        (
            tools.generate_page,
            "Build web pages from screenshots, a URL or a text prompt. Returns each option's "
            "files (embedded, and as s2c:// resources), cost and fidelity score, the "
            "generation id (for update_page) and an image of each rendered page. Sends "
            "progress while it runs; cancelling the call cancels the generation.",
            None,
        ),
        (
            tools.update_page,
            "Change one option of an earlier generation by an instruction (optionally about "
            "one selected element). Returns the new generation like generate_page.",
            None,
        ),
        (
            tools.capture_url,
            "Capture a public web page as a PNG (full page, clipped at the suite's height limit).",
            ToolAnnotations(read_only_hint=True, open_world_hint=True),
        ),
        (
            tools.list_models,
            "The models the suite knows and whether each is usable now.",
            read_only,
        ),
        (
            tools.get_generation,
            "The run record of a generation: status, and per option its model, files, cost "
            "and fidelity scores.",
            read_only,
        ),
    ]
    for fn, description, hints in register:
        server.add_tool(fn, description=description, annotations=hints)
    server.resource(URI_TEMPLATE, name="generated-file", description="A file of a generated page.")(
        tools.read_file
    )
    return server
