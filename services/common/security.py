"""Transport security of the internal gRPC hops: TLS, mutual TLS and a shared token.

Environment (one set shared by every service; `from_env(prefix=…)` reads another set):

- `S2C_GRPC_TLS_CERT`, `S2C_GRPC_TLS_KEY`: PEM certificate chain and its private key.
  A server presents them; with mTLS a client presents them too.
- `S2C_GRPC_TLS_CA`: PEM CA bundle. Clients verify servers against it (the system roots
  when empty); with mTLS, servers verify clients against it.
- `S2C_GRPC_MTLS`: `1` / `true` / `yes` — servers require a client certificate signed
  by the CA, clients present theirs.
- `S2C_GRPC_TLS_SERVER_NAME`: the name clients check the server certificate against
  instead of the target's host — for `ipv4:` address lists and certificates issued to
  a service name.
- `S2C_GRPC_TOKEN`: shared secret (at least 8 URL-safe characters). Servers require
  `authorization: Bearer <token>` on every RPC; clients send it.

A server listens with TLS when a certificate and key are set; a client dials with TLS
when a CA or a certificate is set. Everything empty: plaintext, no token (local dev).

Unauthenticated RPCs: `grpc.health.v1.Health/*` only, because Kubernetes gRPC probes and
load balancers cannot send metadata. Server reflection requires the token, since it maps
the whole API surface; grpcurl passes it with `-H "authorization: Bearer $S2C_GRPC_TOKEN"`.

Certificates and keys are read when a port or channel is created: rotating them means
restarting the service.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import grpc

DEFAULT_PREFIX = "S2C_GRPC_"
AUTH_METADATA_KEY = "authorization"
UNAUTHENTICATED_DETAILS = "missing or invalid token"
# Probes and load-balancer health checks cannot carry credentials.
PUBLIC_METHOD_PREFIXES = ("/grpc.health.v1.Health/",)

# URL-safe so the same token works in headers, query strings and log redaction unchanged.
_TOKEN_RE = re.compile(r"[A-Za-z0-9._~-]{8,}")
_TRUE = frozenset({"1", "true", "yes", "on"})


def check_token(token: str, name: str) -> None:
    """Raises ValueError (without the token's text) when `token` is set but unusable."""
    if token and not _TOKEN_RE.fullmatch(token):
        raise ValueError(
            f"{name} must be at least 8 characters from A-Z a-z 0-9 . _ ~ - "
            "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )


def token_digest(token: str) -> bytes:
    # Comparing fixed-size digests keeps hmac.compare_digest from leaking the length.
    return hashlib.sha256(token.encode()).digest()


def bearer_matches(value: str | bytes, expected_digest: bytes) -> bool:
    """Whether an `authorization` value is `Bearer <token>` for the token of `expected_digest`."""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    scheme, _, credential = value.strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(token_digest(credential.strip()), expected_digest)


@dataclass(frozen=True, repr=False)
class GrpcSecurity:
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    require_client_cert: bool = False
    token: str = ""
    server_name: str = ""

    def __post_init__(self) -> None:
        if bool(self.cert_file) != bool(self.key_file):
            raise ValueError("TLS needs both a certificate and its key (S2C_GRPC_TLS_CERT/KEY)")
        if self.require_client_cert and not (self.cert_file and self.ca_file):
            raise ValueError(
                "mutual TLS (S2C_GRPC_MTLS) needs a certificate, a key and a CA "
                "(S2C_GRPC_TLS_CERT, S2C_GRPC_TLS_KEY, S2C_GRPC_TLS_CA)"
            )
        check_token(self.token, "the gRPC token (S2C_GRPC_TOKEN)")

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, prefix: str = DEFAULT_PREFIX
    ) -> GrpcSecurity:
        env = os.environ if env is None else env
        return cls(
            cert_file=env.get(f"{prefix}TLS_CERT", "").strip(),
            key_file=env.get(f"{prefix}TLS_KEY", "").strip(),
            ca_file=env.get(f"{prefix}TLS_CA", "").strip(),
            require_client_cert=env.get(f"{prefix}MTLS", "").strip().lower() in _TRUE,
            token=env.get(f"{prefix}TOKEN", "").strip(),
            server_name=env.get(f"{prefix}TLS_SERVER_NAME", "").strip(),
        )

    @property
    def server_tls(self) -> bool:
        return bool(self.cert_file)

    @property
    def client_tls(self) -> bool:
        return bool(self.ca_file or self.cert_file)

    def __repr__(self) -> str:
        return (
            f"GrpcSecurity(cert_file={self.cert_file!r}, key_file={self.key_file!r}, "
            f"ca_file={self.ca_file!r}, require_client_cert={self.require_client_cert!r}, "
            f"token={'<redacted>' if self.token else ''!r}, server_name={self.server_name!r})"
        )


def _read(path: str) -> bytes:
    return Path(path).read_bytes()


def server_credentials(security: GrpcSecurity) -> grpc.ServerCredentials:
    """TLS credentials of a server; requires `security.server_tls`."""
    if not security.server_tls:
        raise ValueError("server TLS needs a certificate and key (S2C_GRPC_TLS_CERT/KEY)")
    pair = [(_read(security.key_file), _read(security.cert_file))]
    if security.require_client_cert:
        return grpc.ssl_server_credentials(
            pair, root_certificates=_read(security.ca_file), require_client_auth=True
        )
    return grpc.ssl_server_credentials(pair)


def add_port(server: grpc.aio.Server, address: str, security: GrpcSecurity) -> int:
    """Binds `address` (port 0 picks one) with TLS when a certificate is set; returns the port.

    grpc raises RuntimeError when the address cannot be bound.
    """
    if security.server_tls:
        return server.add_secure_port(address, server_credentials(security))
    return server.add_insecure_port(address)


# A string: the grpc stubs make RpcMethodHandler generic, the runtime class is not.
Continuation: TypeAlias = (
    "Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]]"
)


async def _deny(request: object, context: grpc.aio.ServicerContext[Any, Any]) -> None:
    await context.abort(grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED_DETAILS)


def _denying_handler(
    handler: grpc.RpcMethodHandler[Any, Any] | None,
) -> grpc.RpcMethodHandler[Any, Any]:
    # Same arity as the method, so the call is handled as the client makes it; no
    # deserializer, so nothing an unauthenticated caller sends is ever parsed.
    streaming_in = handler is not None and handler.request_streaming
    streaming_out = handler is not None and handler.response_streaming
    if streaming_in and streaming_out:
        return grpc.stream_stream_rpc_method_handler(_deny)
    if streaming_in:
        return grpc.stream_unary_rpc_method_handler(_deny)
    if streaming_out:
        return grpc.unary_stream_rpc_method_handler(_deny)
    return grpc.unary_unary_rpc_method_handler(_deny)


class TokenAuthInterceptor(grpc.aio.ServerInterceptor):
    """Requires `authorization: Bearer <token>` on every RPC but the public ones."""

    def __init__(self, token: str, public_prefixes: Sequence[str] = PUBLIC_METHOD_PREFIXES) -> None:
        if not token:
            raise ValueError("TokenAuthInterceptor needs a token")
        self._digest = token_digest(token)
        self._public = tuple(public_prefixes)

    def authorized(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> bool:
        return any(
            key.lower() == AUTH_METADATA_KEY and bearer_matches(value, self._digest)
            for key, value in metadata or ()
        )

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        method = handler_call_details.method
        if method.startswith(self._public) or self.authorized(
            handler_call_details.invocation_metadata
        ):
            return await continuation(handler_call_details)
        # Unknown methods are refused the same way, so callers without the token
        # learn nothing about which methods exist.
        return _denying_handler(await continuation(handler_call_details))


def server_interceptors(security: GrpcSecurity) -> list[grpc.aio.ServerInterceptor]:
    return [TokenAuthInterceptor(security.token)] if security.token else []


def _with_token(details: grpc.aio.ClientCallDetails, value: str) -> grpc.aio.ClientCallDetails:
    metadata = grpc.aio.Metadata(*(details.metadata or ()))
    if not metadata.get_all(AUTH_METADATA_KEY):
        metadata.add(AUTH_METADATA_KEY, value)
    return grpc.aio.ClientCallDetails(
        details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
    )


class _Token:
    """Adds the bearer token to a call's metadata, whatever the call's kind."""

    def __init__(self, value: str) -> None:
        self._value = value

    async def _intercept(
        self,
        continuation: Callable[..., Awaitable[Any]],
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        return await continuation(_with_token(client_call_details, self._value), request)

    async def _intercept_stream(
        self,
        continuation: Callable[..., Awaitable[Any]],
        client_call_details: grpc.aio.ClientCallDetails,
        request_iterator: Any,
    ) -> Any:
        # The same, under the parameter name grpc.aio gives a client stream's messages.
        return await self._intercept(continuation, client_call_details, request_iterator)


# One class per RPC kind: grpc.aio files an interceptor under the first kind it
# implements only, so a single class covering all four would skip streaming calls.
class _UnaryUnaryToken(_Token, grpc.aio.UnaryUnaryClientInterceptor):
    intercept_unary_unary = _Token._intercept


class _UnaryStreamToken(_Token, grpc.aio.UnaryStreamClientInterceptor):
    intercept_unary_stream = _Token._intercept


class _StreamUnaryToken(_Token, grpc.aio.StreamUnaryClientInterceptor):
    intercept_stream_unary = _Token._intercept_stream


class _StreamStreamToken(_Token, grpc.aio.StreamStreamClientInterceptor):
    intercept_stream_stream = _Token._intercept_stream


def token_client_interceptors(token: str) -> list[grpc.aio.ClientInterceptor]:
    """Interceptors sending the bearer token as metadata, for plaintext channels
    (gRPC refuses call credentials without TLS)."""
    value = f"Bearer {token}"
    return [
        _UnaryUnaryToken(value),
        _UnaryStreamToken(value),
        _StreamUnaryToken(value),
        _StreamStreamToken(value),
    ]


def channel_credentials(security: GrpcSecurity) -> grpc.ChannelCredentials:
    """TLS credentials of a client (with the token as call credentials when set)."""
    if not security.client_tls:
        raise ValueError("client TLS needs a CA or a certificate (S2C_GRPC_TLS_CA/CERT)")
    present_cert = security.require_client_cert and security.cert_file
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_read(security.ca_file) if security.ca_file else None,
        private_key=_read(security.key_file) if present_cert else None,
        certificate_chain=_read(security.cert_file) if present_cert else None,
    )
    if security.token:
        credentials = grpc.composite_channel_credentials(
            credentials, grpc.access_token_call_credentials(security.token)
        )
    return credentials


def create_channel(
    target: str, security: GrpcSecurity, options: Sequence[tuple[str, Any]] = ()
) -> grpc.aio.Channel:
    """A channel to `target` secured as configured; create it inside the running loop."""
    options = list(options)
    if security.client_tls:
        if security.server_name:
            options.append(("grpc.ssl_target_name_override", security.server_name))
        return grpc.aio.secure_channel(target, channel_credentials(security), options=options)
    interceptors = token_client_interceptors(security.token) if security.token else None
    return grpc.aio.insecure_channel(target, options=options, interceptors=interceptors)
