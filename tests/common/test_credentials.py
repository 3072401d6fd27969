"""The pairing rule: a key only ever travels with a base URL from its own source."""

from __future__ import annotations

import pytest

from services.common.credentials import (
    PROVIDERS,
    TOOL_PROVIDERS,
    CredentialPolicy,
    Credentials,
    CredentialsError,
    Provider,
    base_url_field,
    key_field,
    request_base_urls_allowed,
)

ENV = Credentials(
    openai_api_key="env-openai",
    openai_base_url="https://env.openai/v1",
    anthropic_api_key="env-anthropic",
    anthropic_base_url="https://env.anthropic",
    gemini_api_key="env-gemini",
    gemini_base_url="https://env.gemini",
    replicate_api_token="env-replicate",
    replicate_base_url="https://env.replicate",
)
ATTACKER = "http://127.0.0.1:9/v1"


def creds(provider: Provider, key: str = "", url: str = "") -> Credentials:
    return Credentials(**{key_field(provider): key, base_url_field(provider): url})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_request_base_url_without_request_key_is_refused(provider: Provider) -> None:
    policy = CredentialPolicy(ENV)
    request = creds(provider, url=ATTACKER)
    [violation] = policy.violations(request, prefix="credentials.")
    assert violation.field == f"credentials.{base_url_field(provider)}"
    assert f"needs credentials.{key_field(provider)} in the same request" in violation.description
    with pytest.raises(CredentialsError):
        policy.endpoint(request, provider)
    with pytest.raises(CredentialsError):
        policy.resolve(request)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_request_key_and_url_travel_together(provider: Provider) -> None:
    request = creds(provider, key="req-key", url=ATTACKER)
    assert CredentialPolicy(ENV).violations(request) == []
    assert CredentialPolicy(ENV).endpoint(request, provider) == ("req-key", ATTACKER)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_environment_key_goes_only_to_the_environment_url(provider: Provider) -> None:
    policy = CredentialPolicy(ENV)
    # Another provider's request URL changes nothing for this one.
    others = [p for p in PROVIDERS if p != provider]
    request = creds(others[0], key="other-key", url=ATTACKER)
    assert policy.endpoint(request, provider) == (ENV.key(provider), ENV.base_url(provider))
    assert policy.endpoint(Credentials(), provider) == (ENV.key(provider), ENV.base_url(provider))
    bare = CredentialPolicy(Credentials(**{key_field(provider): "env-only"}))
    assert bare.endpoint(Credentials(), provider) == ("env-only", "")  # the SDK's default


@pytest.mark.parametrize("provider", PROVIDERS)
def test_request_key_alone_uses_the_deployment_endpoint(provider: Provider) -> None:
    request = creds(provider, key="req-key")
    assert CredentialPolicy(ENV).endpoint(request, provider) == ("req-key", ENV.base_url(provider))


def test_resolve_pairs_every_provider_from_one_source() -> None:
    request = Credentials(openai_api_key="req-openai", openai_base_url=ATTACKER)
    resolved = CredentialPolicy(ENV).resolve(request)
    assert (resolved.openai_api_key, resolved.openai_base_url) == ("req-openai", ATTACKER)
    assert resolved.anthropic_api_key == "env-anthropic"
    assert resolved.anthropic_base_url == "https://env.anthropic"
    assert "env-openai" not in repr(resolved)
    assert "req-openai" not in repr(resolved)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_switch_refuses_every_request_base_url(provider: Provider) -> None:
    policy = CredentialPolicy(ENV, allow_request_base_urls=False)
    request = creds(provider, key="req-key", url=ATTACKER)
    [violation] = policy.violations(request)
    assert violation.field == base_url_field(provider)
    assert "S2C_ALLOW_REQUEST_BASE_URLS" in violation.description
    with pytest.raises(CredentialsError):
        policy.endpoint(request, provider)
    # Keys alone are still welcome.
    assert policy.endpoint(creds(provider, key="req-key"), provider)[0] == "req-key"


@pytest.mark.parametrize(
    ("value", "allowed"),
    [("", True), ("1", True), ("true", True), ("on", True), ("0", False), ("No", False)],
)
def test_switch_reads_the_environment(value: str, allowed: bool) -> None:
    assert request_base_urls_allowed({"S2C_ALLOW_REQUEST_BASE_URLS": value}) is allowed
    assert request_base_urls_allowed({}) is True


def test_switch_with_a_typo_is_an_error() -> None:
    with pytest.raises(ValueError, match="S2C_ALLOW_REQUEST_BASE_URLS must be 1 or 0"):
        request_base_urls_allowed({"S2C_ALLOW_REQUEST_BASE_URLS": "maybe"})


def test_tool_credentials_hold_no_model_keys() -> None:
    kept = ENV.only(TOOL_PROVIDERS)
    assert kept.openai_api_key == kept.anthropic_api_key == ""
    assert kept.openai_base_url == kept.anthropic_base_url == ""
    assert (kept.gemini_api_key, kept.replicate_api_token) == ("env-gemini", "env-replicate")
    assert kept.replicate_base_url == "https://env.replicate"
