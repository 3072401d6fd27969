"""The suite with every lock on: TLS between services, a gRPC token, a gateway token."""

from __future__ import annotations

from pathlib import Path

import grpc
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.common.security import GrpcSecurity, create_channel
from tests.certs import make_pki
from tests.processes import running_processes
from tests.suite import create_params, run_ws

GRPC_TOKEN = "grpc-token-RECOGNISABLE-42"
GATEWAY_TOKEN = "gateway-token-RECOGNISABLE-43"


async def test_tls_and_tokens_end_to_end(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    env = {
        "S2C_GRPC_TLS_CERT": str(pki.server.cert_file),
        "S2C_GRPC_TLS_KEY": str(pki.server.key_file),
        "S2C_GRPC_TLS_CA": str(pki.ca.cert_file),
        "S2C_GRPC_TOKEN": GRPC_TOKEN,
        "S2C_GATEWAY_TOKEN": GATEWAY_TOKEN,
    }
    async with running_processes(tmp_path / "data", env) as suite:
        refused = await run_ws(suite.ws_url, create_params())
        allowed = await run_ws(f"{suite.ws_url}?token={GATEWAY_TOKEN}", create_params())

        target = f"127.0.0.1:{suite.agent.port}"
        request = pb.ListModelsRequest()
        async with grpc.aio.insecure_channel(target) as plaintext:
            try:
                await pb_grpc.AgentServiceStub(plaintext).ListModels(request, timeout=5)
                plaintext_ok = True
            except grpc.aio.AioRpcError:
                plaintext_ok = False
        no_token = GrpcSecurity(ca_file=str(pki.ca.cert_file))
        async with create_channel(target, no_token) as channel:
            try:
                await pb_grpc.AgentServiceStub(channel).ListModels(request, timeout=5)
                no_token_code = grpc.StatusCode.OK
            except grpc.aio.AioRpcError as exc:
                no_token_code = exc.code()
                no_token_details = exc.details() or ""
        full = GrpcSecurity(ca_file=str(pki.ca.cert_file), token=GRPC_TOKEN)
        async with create_channel(target, full) as channel:
            models = await pb_grpc.AgentServiceStub(channel).ListModels(request, timeout=5)
        logs = "".join(suite.agent.log + suite.tools.log + suite.gateway.log)

    assert refused.close_code == 4332
    assert refused.frames[0]["type"] == "error"
    assert GATEWAY_TOKEN not in refused.frames[0]["value"]
    assert allowed.close_code == 1000
    assert len(allowed.of("variantComplete")) == 2
    assert not plaintext_ok
    assert no_token_code == grpc.StatusCode.UNAUTHENTICATED
    assert GRPC_TOKEN not in no_token_details
    assert any(m.id == "demo" for m in models.models)
    assert GRPC_TOKEN not in logs
    assert GATEWAY_TOKEN not in logs
