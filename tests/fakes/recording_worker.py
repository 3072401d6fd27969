"""A tool worker in front of a real one that records the credentials of every request, for
tests proving which keys reach the tool workers."""

from __future__ import annotations

from s2c.common.v1 import common_pb2
from s2c.tools.v1 import tool_service_pb2 as tpb
from s2c.tools.v1 import tool_service_pb2_grpc as tpb_grpc


class RecordingToolService(tpb_grpc.ToolServiceServicer):
    """A tool worker in front of a real one: records the credentials of every request."""

    def __init__(self, target: tpb_grpc.ToolServiceAsyncStub) -> None:
        self.target = target
        self.seen: list[tuple[str, common_pb2.Credentials]] = []

    async def ListTools(
        self, request: tpb.ListToolsRequest, context: object
    ) -> tpb.ListToolsResponse:
        self.seen.append(("ListTools", request.credentials))
        response: tpb.ListToolsResponse = await self.target.ListTools(request)
        return response

    async def ExecuteTool(
        self, request: tpb.ExecuteToolRequest, context: object
    ) -> tpb.ExecuteToolResponse:
        self.seen.append((f"ExecuteTool {request.call.name}", request.context.credentials))
        response: tpb.ExecuteToolResponse = await self.target.ExecuteTool(request)
        return response

    async def CaptureUrl(
        self, request: tpb.CaptureUrlRequest, context: object
    ) -> tpb.CaptureUrlResponse:
        # Carries no credentials; forwarded so the recorder is a complete worker.
        response: tpb.CaptureUrlResponse = await self.target.CaptureUrl(request)
        return response

    async def ScoreFidelity(
        self, request: tpb.ScoreFidelityRequest, context: object
    ) -> tpb.ScoreFidelityResponse:
        # Carries no credentials either.
        response: tpb.ScoreFidelityResponse = await self.target.ScoreFidelity(request)
        return response

    async def BuildProject(
        self, request: tpb.BuildProjectRequest, context: object
    ) -> tpb.BuildProjectResponse:
        # Files only.
        built: tpb.BuildProjectResponse = await self.target.BuildProject(request)
        return built

    async def CompareRenders(
        self, request: tpb.CompareRendersRequest, context: object
    ) -> tpb.CompareRendersResponse:
        # Pages only.
        compared: tpb.CompareRendersResponse = await self.target.CompareRenders(request)
        return compared
