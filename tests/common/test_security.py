"""Internal gRPC security: TLS, mutual TLS and the shared token, against a real aio server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

from services.common.security import (
    UNAUTHENTICATED_DETAILS,
    GrpcSecurity,
    TokenAuthInterceptor,
    add_port,
    create_channel,
    server_interceptors,
)
from tests.certs import Pki, issue, make_pki

TOKEN = "s3cret-token-for-tests"
WRONG = "wrong-token-not-this-one"
ECHO = "test.Echo"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("other"), "other-ca")


def tls(pki: Pki, **fields: Any) -> GrpcSecurity:
    """What a service with the whole PKI configured would read from its env."""
    return GrpcSecurity(
        cert_file=str(pki.server.cert_file),
        key_file=str(pki.server.key_file),
        ca_file=str(pki.ca.cert_file),
        **fields,
    )


def mtls_client(pki: Pki, client_pki: Pki | None = None, **fields: Any) -> GrpcSecurity:
    client = (client_pki or pki).client
    return GrpcSecurity(
        cert_file=str(client.cert_file),
        key_file=str(client.key_file),
        ca_file=str(pki.ca.cert_file),
        require_client_cert=True,
        **fields,
    )


async def _unary(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
    # Echoing a caller-set header proves the token interceptor keeps the caller's metadata.
    extra = dict(context.invocation_metadata() or ()).get("x-test", "")
    return request + str(extra).encode()


async def _stream(
    request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]
) -> AsyncIterator[bytes]:
    for i in range(3):
        yield request + str(i).encode()


async def _collect(
    requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[bytes, bytes]
) -> bytes:
    return b"".join([part async for part in requests])


@asynccontextmanager
async def serving(security: GrpcSecurity) -> AsyncIterator[str]:
    server = grpc.aio.server(interceptors=server_interceptors(security))
    server.add_generic_rpc_handlers(
        [
            grpc.method_handlers_generic_handler(
                ECHO,
                {
                    "Unary": grpc.unary_unary_rpc_method_handler(_unary),
                    "Stream": grpc.unary_stream_rpc_method_handler(_stream),
                    "Collect": grpc.stream_unary_rpc_method_handler(_collect),
                },
            )
        ]
    )
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    reflection.enable_server_reflection([ECHO, reflection.SERVICE_NAME], server)
    port = add_port(server, "127.0.0.1:0", security)
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)


async def unary(target: str, security: GrpcSecurity, **kwargs: Any) -> bytes:
    async with create_channel(target, security) as channel:
        call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(f"/{ECHO}/Unary")
        return await call(b"ping", timeout=10, **kwargs)


async def stream(target: str, security: GrpcSecurity) -> list[bytes]:
    async with create_channel(target, security) as channel:
        call: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = channel.unary_stream(
            f"/{ECHO}/Stream"
        )
        return [reply async for reply in call(b"n", timeout=10)]


async def collect(target: str, security: GrpcSecurity) -> bytes:
    async with create_channel(target, security) as channel:
        call: grpc.aio.StreamUnaryMultiCallable[bytes, bytes] = channel.stream_unary(
            f"/{ECHO}/Collect"
        )
        return await call(iter([b"a", b"b"]), timeout=10)


async def health_check(target: str, security: GrpcSecurity) -> Any:
    async with create_channel(target, security) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        return await stub.Check(health_pb2.HealthCheckRequest(), timeout=10)


async def rpc_error(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


# ---------------------------------------------------------------------------------------
# TLS and mutual TLS


async def test_tls_accepts_a_client_trusting_the_ca(pki: Pki) -> None:
    async with serving(tls(pki)) as target:
        assert await unary(target, GrpcSecurity(ca_file=str(pki.ca.cert_file))) == b"ping"
        response = await health_check(target, tls(pki))
        assert response.status == health_pb2.HealthCheckResponse.SERVING


async def test_tls_fails_with_a_wrong_ca(pki: Pki, other: Pki) -> None:
    async with serving(tls(pki)) as target:
        error = await rpc_error(unary(target, GrpcSecurity(ca_file=str(other.ca.cert_file))))
    assert error.code() == grpc.StatusCode.UNAVAILABLE


async def test_tls_server_refuses_plaintext(pki: Pki) -> None:
    async with serving(tls(pki)) as target:
        error = await rpc_error(unary(target, GrpcSecurity()))
    assert error.code() == grpc.StatusCode.UNAVAILABLE


async def test_server_name_checks_a_certificate_issued_to_a_service_name(
    pki: Pki, tmp_path: Path
) -> None:
    named = issue(pki.ca, tmp_path, "tools", server=True, dns_names=("tools",), ip_addresses=())
    server = GrpcSecurity(cert_file=str(named.cert_file), key_file=str(named.key_file))
    client = GrpcSecurity(ca_file=str(pki.ca.cert_file))
    async with serving(server) as target:
        error = await rpc_error(unary(target, client))
        assert error.code() == grpc.StatusCode.UNAVAILABLE
        assert await unary(target, replace(client, server_name="tools")) == b"ping"


async def test_mtls_refuses_a_client_without_a_certificate(pki: Pki) -> None:
    async with serving(tls(pki, require_client_cert=True)) as target:
        error = await rpc_error(unary(target, GrpcSecurity(ca_file=str(pki.ca.cert_file))))
    assert error.code() == grpc.StatusCode.UNAVAILABLE


async def test_mtls_refuses_a_client_certificate_from_another_ca(pki: Pki, other: Pki) -> None:
    async with serving(tls(pki, require_client_cert=True)) as target:
        error = await rpc_error(unary(target, mtls_client(pki, other)))
    assert error.code() == grpc.StatusCode.UNAVAILABLE


async def test_mtls_accepts_a_client_certificate_from_the_ca(pki: Pki) -> None:
    async with serving(tls(pki, require_client_cert=True)) as target:
        assert await unary(target, mtls_client(pki)) == b"ping"
        assert await stream(target, mtls_client(pki)) == [b"n0", b"n1", b"n2"]


async def test_without_mtls_a_client_does_not_need_a_certificate(pki: Pki) -> None:
    async with serving(tls(pki)) as target:
        assert await unary(target, GrpcSecurity(ca_file=str(pki.ca.cert_file))) == b"ping"


# ---------------------------------------------------------------------------------------
# Shared token, over plaintext (client interceptor) and over TLS (call credentials)


@pytest.fixture(params=["plaintext", "tls"])
def transport(request: pytest.FixtureRequest, pki: Pki) -> Iterator[tuple[GrpcSecurity, Any]]:
    """(server security, client security for a token) on one transport."""
    if request.param == "plaintext":
        yield GrpcSecurity(token=TOKEN), lambda token: GrpcSecurity(token=token)
    else:
        ca = str(pki.ca.cert_file)
        yield tls(pki, token=TOKEN), lambda token: GrpcSecurity(ca_file=ca, token=token)


def assert_unauthenticated(error: grpc.aio.AioRpcError) -> None:
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert error.details() == UNAUTHENTICATED_DETAILS
    for text in (TOKEN, WRONG):
        assert text not in str(error.details())
        assert text not in str(error.debug_error_string())


async def test_token_is_required_on_unary_calls(transport: tuple[GrpcSecurity, Any]) -> None:
    server, client = transport
    async with serving(server) as target:
        assert_unauthenticated(await rpc_error(unary(target, client(""))))
        assert_unauthenticated(await rpc_error(unary(target, client(WRONG))))
        assert await unary(target, client(TOKEN), metadata=(("x-test", "!"),)) == b"ping!"


async def test_token_is_required_on_streaming_calls(transport: tuple[GrpcSecurity, Any]) -> None:
    server, client = transport
    async with serving(server) as target:
        assert_unauthenticated(await rpc_error(stream(target, client(""))))
        assert_unauthenticated(await rpc_error(stream(target, client(WRONG))))
        assert await stream(target, client(TOKEN)) == [b"n0", b"n1", b"n2"]
        assert_unauthenticated(await rpc_error(collect(target, client(WRONG))))
        assert await collect(target, client(TOKEN)) == b"ab"


async def test_health_needs_no_token(transport: tuple[GrpcSecurity, Any]) -> None:
    server, client = transport
    async with serving(server) as target:
        response = await health_check(target, client(""))
        assert response.status == health_pb2.HealthCheckResponse.SERVING
        async with create_channel(target, client("")) as channel:
            watch = health_pb2_grpc.HealthStub(channel).Watch(
                health_pb2.HealthCheckRequest(), timeout=10
            )
            first = await watch.read()
            watch.cancel()
        assert first.status == health_pb2.HealthCheckResponse.SERVING


async def test_reflection_needs_the_token() -> None:
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    async with serving(GrpcSecurity(token=TOKEN)) as target:
        for token, allowed in (("", False), (TOKEN, True)):
            async with create_channel(target, GrpcSecurity(token=token)) as channel:
                call = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
                    iter([request]), timeout=10
                )
                if allowed:
                    replies = [reply async for reply in call]
                    names = {s.name for s in replies[0].list_services_response.service}
                    assert ECHO in names
                else:
                    assert_unauthenticated(await rpc_error(call.read()))


async def test_unknown_methods_look_the_same_without_the_token() -> None:
    async with serving(GrpcSecurity(token=TOKEN)) as target:
        for token, code in (
            ("", grpc.StatusCode.UNAUTHENTICATED),
            (TOKEN, grpc.StatusCode.UNIMPLEMENTED),
        ):
            async with create_channel(target, GrpcSecurity(token=token)) as channel:
                call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
                    f"/{ECHO}/Missing"
                )
                error = await rpc_error(call(b"", timeout=10))
            assert error.code() == code


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (f"Bearer {TOKEN}", True),
        (f"bearer {TOKEN}", True),
        (f"Bearer  {TOKEN} ", True),
        (f"Basic {TOKEN}", False),
        (TOKEN, False),
        (f"Bearer {TOKEN}x", False),
        (f"Bearer {TOKEN[:-1]}", False),
        ("Bearer ", False),
        (f"Bearer {TOKEN}".encode(), True),
    ],
)
def test_interceptor_accepts_exactly_the_bearer_token(value: str | bytes, ok: bool) -> None:
    interceptor = TokenAuthInterceptor(TOKEN)
    assert interceptor.authorized([("authorization", value)]) is ok
    assert interceptor.authorized([("x-other", f"Bearer {TOKEN}")]) is False
    assert interceptor.authorized(None) is False


# ---------------------------------------------------------------------------------------
# Settings


def test_from_env_reads_the_shared_names() -> None:
    env = {
        "S2C_GRPC_TLS_CERT": "/certs/tls.crt",
        "S2C_GRPC_TLS_KEY": "/certs/tls.key",
        "S2C_GRPC_TLS_CA": "/certs/ca.crt",
        "S2C_GRPC_MTLS": "1",
        "S2C_GRPC_TOKEN": TOKEN,
        "S2C_GRPC_TLS_SERVER_NAME": "tools",
    }
    security = GrpcSecurity.from_env(env)
    assert security == GrpcSecurity(
        "/certs/tls.crt", "/certs/tls.key", "/certs/ca.crt", True, TOKEN, "tools"
    )
    assert security.server_tls
    assert security.client_tls
    assert GrpcSecurity.from_env({}) == GrpcSecurity()
    assert not GrpcSecurity().client_tls
    assert GrpcSecurity.from_env({"X_TOKEN": TOKEN}, prefix="X_").token == TOKEN


def test_repr_redacts_the_token() -> None:
    text = repr(GrpcSecurity(token=TOKEN, ca_file="/ca.pem"))
    assert TOKEN not in text
    assert "<redacted>" in text
    assert "/ca.pem" in text
    assert "<redacted>" not in repr(GrpcSecurity())


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"cert_file": "/c.pem"}, "key"),
        ({"key_file": "/k.pem"}, "key"),
        ({"cert_file": "/c", "key_file": "/k", "require_client_cert": True}, "CA"),
        ({"ca_file": "/ca", "require_client_cert": True}, "certificate"),
        ({"token": "short"}, "at least 8"),
        ({"token": "has space in it"}, "at least 8"),
    ],
)
def test_invalid_settings_fail_clearly(fields: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle) as caught:
        GrpcSecurity(**fields)
    if "token" in fields:
        assert fields["token"] not in str(caught.value)


def test_no_token_no_interceptor() -> None:
    assert server_interceptors(GrpcSecurity()) == []
    assert len(server_interceptors(GrpcSecurity(token=TOKEN))) == 1


async def test_undecodable_request_bytes_get_invalid_argument() -> None:
    from s2c.agent.v1 import agent_service_pb2 as agent_pb
    from s2c.agent.v1 import agent_service_pb2_grpc as agent_grpc

    from services.common.grpc_server import start_server

    class Agent(agent_grpc.AgentServiceServicer):
        async def ListModels(
            self, request: agent_pb.ListModelsRequest, context: grpc.aio.ServicerContext[Any, Any]
        ) -> agent_pb.ListModelsResponse:
            return agent_pb.ListModelsResponse()

    def register(server: grpc.aio.Server) -> list[str]:
        # Only ListModels is implemented: the others answer UNIMPLEMENTED, unused here.
        agent_grpc.add_AgentServiceServicer_to_server(Agent(), server)  # type: ignore[abstract]
        return ["s2c.agent.v1.AgentService"]

    running = await start_server("127.0.0.1:0", register)
    garbage = b"\xff\xff\xff\xff"
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            unary: Any = channel.unary_unary("/s2c.agent.v1.AgentService/ListModels")
            streaming: Any = channel.unary_stream("/s2c.agent.v1.AgentService/GenerateCode")

            async def drain() -> None:
                async for _ in streaming(garbage):
                    pass

            with pytest.raises(grpc.aio.AioRpcError) as unary_error:
                await unary(garbage)
            with pytest.raises(grpc.aio.AioRpcError) as stream_error:
                await drain()
            for caught in (unary_error, stream_error):
                assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "not a valid protobuf message" in (caught.value.details() or "")
            assert await unary(b"") == b""
    finally:
        await running.stop(0)
