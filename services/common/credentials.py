"""Per-request keys and endpoints, shared by the agent and the tool service.

The pairing rule (docs/architecture.md, "Secrets"): a key is resolved per provider
together with the base URL it may be sent to, and the request can never pair its own
base URL with the service's key:

* the request names a key → that key, with the request's base URL if it names one,
  else the deployment's (environment) base URL, else the provider's default;
* the request names no key → the environment's key with the environment's base URL;
* the request names a base URL but no key → refused (`CredentialsError`), never the
  environment's key at the request's address;
* with request base URLs switched off (`S2C_ALLOW_REQUEST_BASE_URLS=0`) any request
  base URL is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Literal

from s2c.common.v1 import common_pb2

from services.common.errors import FieldViolation

Provider = Literal["openai", "anthropic", "gemini", "replicate"]
PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic", "gemini", "replicate")
# The providers the tool workers call (Replicate for the image tools, Gemini for
# extract_assets); model keys have no business on a worker.
TOOL_PROVIDERS: tuple[Provider, ...] = ("gemini", "replicate")
_KEY_FIELDS: dict[Provider, str] = {
    "openai": "openai_api_key",
    "anthropic": "anthropic_api_key",
    "gemini": "gemini_api_key",
    "replicate": "replicate_api_token",
}


def key_field(provider: Provider) -> str:
    return _KEY_FIELDS[provider]


def base_url_field(provider: Provider) -> str:
    return f"{provider}_base_url"


@dataclass(frozen=True, slots=True)
class Credentials:
    """Keys and base URLs; empty strings mean "not given".

    Secrets: the repr is redacted so a key can never reach a log line by accident.
    """

    openai_api_key: str = ""
    openai_base_url: str = ""
    anthropic_api_key: str = ""
    anthropic_base_url: str = ""
    gemini_api_key: str = ""
    gemini_base_url: str = ""
    replicate_api_token: str = ""
    replicate_base_url: str = ""

    def __repr__(self) -> str:
        present = [f.name for f in fields(self) if getattr(self, f.name)]
        return f"Credentials(set={present})"

    def key(self, provider: Provider) -> str:
        value: str = getattr(self, key_field(provider))
        return value

    def base_url(self, provider: Provider) -> str:
        value: str = getattr(self, base_url_field(provider))
        return value

    def only(self, providers: tuple[Provider, ...]) -> Credentials:
        """A copy holding just these providers' keys and base URLs."""
        kept: dict[str, str] = {}
        for provider in providers:
            kept[key_field(provider)] = self.key(provider)
            kept[base_url_field(provider)] = self.base_url(provider)
        return Credentials(**kept)

    def secrets(self) -> list[str]:
        """The non-empty keys, for redaction."""
        return [value for provider in PROVIDERS if (value := self.key(provider))]


class CredentialsError(ValueError):
    """Request credentials that break the pairing rule; carries one violation per field."""

    def __init__(self, violations: list[FieldViolation]) -> None:
        self.violations = violations
        super().__init__("; ".join(f"{v.field}: {v.description}" for v in violations))


@dataclass(frozen=True, slots=True)
class CredentialPolicy:
    """Resolves request credentials against a service's environment, pair by pair."""

    environment: Credentials = Credentials()
    allow_request_base_urls: bool = True

    def violations(self, request: Credentials, *, prefix: str = "") -> list[FieldViolation]:
        """What is wrong with `request`; field names are the proto's, after `prefix`."""
        out: list[FieldViolation] = []
        for provider in PROVIDERS:
            if not request.base_url(provider):
                continue
            url_name = prefix + base_url_field(provider)
            if not self.allow_request_base_urls:
                out.append(
                    FieldViolation(
                        url_name,
                        "this server does not accept base URLs in requests "
                        "(S2C_ALLOW_REQUEST_BASE_URLS is off)",
                    )
                )
            elif not request.key(provider):
                out.append(
                    FieldViolation(
                        url_name,
                        f"needs {prefix}{key_field(provider)} in the same request: "
                        "a request's base URL is only ever used with the request's own key",
                    )
                )
        return out

    def check(self, request: Credentials, *, prefix: str = "") -> None:
        violations = self.violations(request, prefix=prefix)
        if violations:
            raise CredentialsError(violations)

    def endpoint(self, request: Credentials, provider: Provider) -> tuple[str, str]:
        """(key, base_url) for `provider`, both from one source; "" base URL: the default.

        Raises CredentialsError rather than ever pairing the environment's key with a
        request's base URL, even for a caller that skipped `check`.
        """
        request_url = request.base_url(provider)
        if request_url:
            self.check(request.only((provider,)))
            return request.key(provider), request_url
        if request.key(provider):
            # The deployment's endpoint, not a secret: upstream sends a request key there too.
            return request.key(provider), self.environment.base_url(provider)
        return self.environment.key(provider), self.environment.base_url(provider)

    def resolve(self, request: Credentials) -> Credentials:
        """Every provider's resolved pair (see `endpoint`), as one Credentials."""
        resolved = Credentials()
        for provider in PROVIDERS:
            key, url = self.endpoint(request, provider)
            resolved = replace(
                resolved, **{key_field(provider): key, base_url_field(provider): url}
            )
        return resolved


def credentials_to_proto(credentials: Credentials) -> common_pb2.Credentials:
    return common_pb2.Credentials(
        openai_api_key=credentials.openai_api_key,
        openai_base_url=credentials.openai_base_url,
        anthropic_api_key=credentials.anthropic_api_key,
        anthropic_base_url=credentials.anthropic_base_url,
        gemini_api_key=credentials.gemini_api_key,
        gemini_base_url=credentials.gemini_base_url,
        replicate_api_token=credentials.replicate_api_token,
        replicate_base_url=credentials.replicate_base_url,
    )


def credentials_from_proto(proto: common_pb2.Credentials) -> Credentials:
    return Credentials(
        openai_api_key=proto.openai_api_key,
        openai_base_url=proto.openai_base_url,
        anthropic_api_key=proto.anthropic_api_key,
        anthropic_base_url=proto.anthropic_base_url,
        gemini_api_key=proto.gemini_api_key,
        gemini_base_url=proto.gemini_base_url,
        replicate_api_token=proto.replicate_api_token,
        replicate_base_url=proto.replicate_base_url,
    )


ALLOW_REQUEST_BASE_URLS_ENV = "S2C_ALLOW_REQUEST_BASE_URLS"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def request_base_urls_allowed(env: Mapping[str, str]) -> bool:
    """`S2C_ALLOW_REQUEST_BASE_URLS`: on unless switched off (upstream accepts them)."""
    value = env.get(ALLOW_REQUEST_BASE_URLS_ENV, "").strip().lower()
    if not value or value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{ALLOW_REQUEST_BASE_URLS_ENV} must be 1 or 0, got {value!r}")
