"""`GET /api/models`: the agent's models (ListModels), for the built-in UI's picker.

Availability is the agent's environment's: a browser holding its own key for a source
marks that source's models available itself (each model names its `credential`), so no
key ever travels on a GET.
"""

from __future__ import annotations

import logging
from typing import Any

import grpc
from aiohttp import web
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.common.proto_enums import enum_values
from services.common.tracing import outgoing_metadata
from services.gateway.keys import CHANNEL_KEY

log = logging.getLogger(__name__)

MODELS_TIMEOUT_S = 10.0
# A stack's number → the name the WS params' generatedCodeConfig takes (`react_vite`).
STACK_NAMES = {pb.Stack.Value(value): name for name, value in enum_values(pb.Stack).items()}


def model_json(model: pb.Model) -> dict[str, Any]:
    return {
        "id": model.id,
        "provider": model.provider,
        "apiName": model.api_name,
        "available": model.available,
        "vision": model.vision,
        "tools": model.tools,
        "video": model.video,
        "endpoint": model.endpoint,
        "credential": model.credential,
    }


async def models(request: web.Request) -> web.Response:
    stub = pb_grpc.AgentServiceStub(request.app[CHANNEL_KEY])
    try:
        answer = await stub.ListModels(
            pb.ListModelsRequest(), timeout=MODELS_TIMEOUT_S, metadata=outgoing_metadata()
        )
    except grpc.aio.AioRpcError as exc:
        log.warning("models unavailable", extra={"code": exc.code().name})
        return web.json_response({"models": [], "error": "agent unavailable"}, status=503)
    stacks = [STACK_NAMES[s] for s in answer.stacks if s in STACK_NAMES]
    return web.json_response({"models": [model_json(m) for m in answer.models], "stacks": stacks})
