"""The pairing rule: a key only ever travels with a base URL from its own source."""

from __future__ import annotations

import pytest
from s2c.common.v1 import common_pb2

from services.common.credentials import (
    CREDENTIALS,
    IDS,
    TOOL_IDS,
    CredentialPolicy,
    Credentials,
    CredentialsError,
    Endpoint,
    credentials_from_proto,
    credentials_to_proto,
    request_base_urls_allowed,
)

ENV = Credentials.of(
    openai=Endpoint("env-openai", "https://env.openai/v1"),
    anthropic=Endpoint("env-anthropic", "https://env.anthropic"),
    gemini=Endpoint("env-gemini", "https://env.gemini"),
    replicate=Endpoint("env-replicate", "https://env.replicate"),
)
ATTACKER = "http://127.0.0.1:9/v1"


def creds(source: str, key: str = "", url: str = "") -> Credentials:
    return Credentials({source: Endpoint(key, url)})


@pytest.mark.parametrize("source", IDS)
def test_request_base_url_without_request_key_is_refused(source: str) -> None:
    policy = CredentialPolicy(ENV)
    request = creds(source, url=ATTACKER)
    [violation] = policy.violations(request, prefix="credentials.")
    assert violation.field == f"credentials.providers[{source}].base_url"
    assert (
        f"needs credentials.providers[{source}].api_key in the same request"
        in violation.description
    )
    with pytest.raises(CredentialsError):
        policy.endpoint(request, source)
    with pytest.raises(CredentialsError):
        policy.resolve(request)


@pytest.mark.parametrize("source", IDS)
def test_request_key_and_url_travel_together(source: str) -> None:
    request = creds(source, key="req-key", url=ATTACKER)
    assert CredentialPolicy(ENV).violations(request) == []
    assert CredentialPolicy(ENV).endpoint(request, source) == Endpoint("req-key", ATTACKER)


@pytest.mark.parametrize("source", IDS)
def test_environment_key_goes_only_to_the_environment_url(source: str) -> None:
    policy = CredentialPolicy(ENV)
    # Another source's request URL changes nothing for this one.
    other = next(s for s in IDS if s != source)
    request = creds(other, key="other-key", url=ATTACKER)
    assert policy.endpoint(request, source) == ENV.get(source)
    assert policy.endpoint(Credentials(), source) == ENV.get(source)
    bare = CredentialPolicy(creds(source, key="env-only"))
    assert bare.endpoint(Credentials(), source) == Endpoint("env-only", "")  # the SDK default


@pytest.mark.parametrize("source", IDS)
def test_request_key_alone_uses_the_deployment_endpoint(source: str) -> None:
    request = creds(source, key="req-key")
    assert CredentialPolicy(ENV).endpoint(request, source) == Endpoint(
        "req-key", ENV.base_url(source)
    )


def test_resolve_pairs_every_source_from_one_source() -> None:
    request = creds("openai", key="req-openai", url=ATTACKER)
    resolved = CredentialPolicy(ENV).resolve(request)
    assert resolved.get("openai") == Endpoint("req-openai", ATTACKER)
    assert resolved.get("anthropic") == Endpoint("env-anthropic", "https://env.anthropic")
    assert "env-openai" not in repr(resolved)
    assert "req-openai" not in repr(resolved)
    assert "env-openai" not in repr(resolved.get("openai"))


@pytest.mark.parametrize("source", IDS)
def test_switch_refuses_every_request_base_url(source: str) -> None:
    policy = CredentialPolicy(ENV, allow_request_base_urls=False)
    request = creds(source, key="req-key", url=ATTACKER)
    [violation] = policy.violations(request)
    assert violation.field == f"providers[{source}].base_url"
    assert "S2C_ALLOW_REQUEST_BASE_URLS" in violation.description
    with pytest.raises(CredentialsError):
        policy.endpoint(request, source)
    # Keys alone are still welcome.
    assert policy.endpoint(creds(source, key="req-key"), source).api_key == "req-key"


def test_an_unknown_source_is_refused_by_name() -> None:
    [violation] = CredentialPolicy(ENV).violations(creds("mistral", key="k"), prefix="c.")
    assert violation.field == "c.providers[mistral]"
    assert violation.description == "unknown provider; known: " + ", ".join(IDS)


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
    kept = ENV.only(TOOL_IDS)
    assert set(kept.providers) == {"gemini", "replicate"}
    assert kept.key("openai") == kept.key("anthropic") == ""
    assert kept.get("replicate") == Endpoint("env-replicate", "https://env.replicate")


def test_the_environment_is_read_from_the_declared_names() -> None:
    env = {spec.key_envs[-1]: f"key-{spec.id}" for spec in CREDENTIALS}
    env |= {spec.base_url_env: f"https://{spec.id}" for spec in CREDENTIALS}
    read = Credentials.from_env(env)
    assert {s: read.get(s) for s in IDS} == {s: Endpoint(f"key-{s}", f"https://{s}") for s in IDS}
    # Replicate's first name wins over its alias; tool workers read only tool sources.
    both = {"REPLICATE_API_TOKEN": "token", "REPLICATE_API_KEY": "alias", "OPENAI_API_KEY": "o"}
    tools = Credentials.from_env(both, TOOL_IDS)
    assert tools.key("replicate") == "token"
    assert tools.key("openai") == ""
    assert sorted(read.secrets()) == sorted(f"key-{s}" for s in IDS)


def test_proto_round_trip_keeps_every_pair_and_drops_empty_ones() -> None:
    proto = credentials_to_proto(Credentials.of(openai=Endpoint("k", "u"), gemini=Endpoint()))
    assert dict(proto.providers) == {
        "openai": common_pb2.ProviderCredentials(api_key="k", base_url="u")
    }
    assert credentials_from_proto(proto).get("openai") == Endpoint("k", "u")


@pytest.mark.parametrize(
    ("key", "what", "position"),
    [
        ("sk-ant-café-0123", "a non-ASCII character", 11),
        ("sk-ant-0123\n", "a space or line break", 12),
        ("sk ant", "a space or line break", 3),
        ("sk-\x07ant", "a control character", 4),
    ],
)
def test_a_key_that_cannot_go_in_a_header_is_refused_saying_why(
    key: str, what: str, position: int
) -> None:
    request = Credentials.of(anthropic=Endpoint(key))

    violations = CredentialPolicy().violations(request, prefix="credentials.")

    assert [v.field for v in violations] == ["credentials.providers[anthropic].api_key"]
    assert violations[0].description.startswith(
        f"contains {what} (character {position} of {len(key)}); API keys are printable ASCII"
    )
    assert key not in violations[0].description


def test_an_environment_key_that_cannot_go_in_a_header_stops_the_service() -> None:
    with pytest.raises(ValueError, match=r"^ANTHROPIC_API_KEY contains a non-ASCII character"):
        Credentials.from_env({"ANTHROPIC_API_KEY": "sk-ant-ключ"})
