"""Per-request keys and endpoints, shared by the agent and the tool service."""

from __future__ import annotations

from dataclasses import dataclass, fields

from s2c.common.v1 import common_pb2


@dataclass(frozen=True, slots=True)
class Credentials:
    """Keys and base URLs; empty strings mean "use the service's environment".

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

    def merged_over(self, fallback: Credentials) -> Credentials:
        """These values, each empty one taken from `fallback` (request wins over environment)."""
        return Credentials(
            **{f.name: getattr(self, f.name) or getattr(fallback, f.name) for f in fields(self)}
        )

    def secrets(self) -> list[str]:
        """The non-empty keys, for redaction."""
        names = ("openai_api_key", "anthropic_api_key", "gemini_api_key", "replicate_api_token")
        return [value for name in names if (value := getattr(self, name))]


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
