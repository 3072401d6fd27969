"""Per-request keys and endpoints, shared by the gateway, the agent and the tool service.

`CREDENTIALS` is the one list of credential sources: each entry names its id (the key
of `Credentials.providers` in the proto), its environment variables and the browser
params that carry it (docs/browser-protocol.md). Everything else reads it: the agent's
and workers' settings, the gateway's params and `/api/providers` (from which the
built-in UI renders its settings fields), the tool client's least-privilege filter.

The pairing rule (docs/architecture.md, "Secrets"): a key is resolved per source
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
from dataclasses import dataclass, field

from s2c.common.v1 import common_pb2

from services.common.errors import FieldViolation


@dataclass(frozen=True, slots=True)
class CredentialSpec:
    """One credential source: where its key and base URL come from, declared once."""

    id: str  # key in the proto's `Credentials.providers`, e.g. "openai"
    display_name: str  # in texts the user reads
    key_envs: tuple[str, ...]  # environment variables of the key; the first set one wins
    base_url_env: str
    browser_key: str  # the upstream browser param carrying a key, e.g. "openAiApiKey"
    browser_base_url: str = ""  # "": the browser protocol carries no base URL for it
    for_tools: bool = False  # a tool worker calls it, so workers receive it
    for_models: bool = True  # a model provider reads it (else only tools do)
    purpose: str = ""  # what it is for beyond models, next to the UI's settings field
    # Where its key goes when neither the request nor the environment names a base URL;
    # "": the SDK's own default.
    default_base_url: str = ""


CREDENTIALS: tuple[CredentialSpec, ...] = (
    CredentialSpec(
        "openai", "OpenAI", ("OPENAI_API_KEY",), "OPENAI_BASE_URL", "openAiApiKey", "openAiBaseURL"
    ),
    CredentialSpec(
        "anthropic", "Anthropic", ("ANTHROPIC_API_KEY",), "ANTHROPIC_BASE_URL", "anthropicApiKey"
    ),
    # A browser key goes to the operator's OPENROUTER_BASE_URL (else the default), as a
    # browser key does for the other sources: the browser protocol carries no base URL.
    CredentialSpec(
        "openrouter",
        "OpenRouter",
        ("OPENROUTER_API_KEY",),
        "OPENROUTER_BASE_URL",
        "openRouterApiKey",
        default_base_url="https://openrouter.ai/api/v1",
    ),
    # Gemini for extract_assets and Replicate for the image tools are what workers call;
    # model keys have no business on a worker.
    CredentialSpec(
        "gemini", "Gemini", ("GEMINI_API_KEY",), "GEMINI_BASE_URL", "geminiApiKey", for_tools=True
    ),
    CredentialSpec(
        "replicate",
        "Replicate",
        ("REPLICATE_API_TOKEN", "REPLICATE_API_KEY"),
        "REPLICATE_BASE_URL",
        "replicateApiKey",
        for_tools=True,
        for_models=False,
        purpose="image generation & editing",
    ),
)
BY_ID: dict[str, CredentialSpec] = {spec.id: spec for spec in CREDENTIALS}
IDS: tuple[str, ...] = tuple(BY_ID)
TOOL_IDS: tuple[str, ...] = tuple(spec.id for spec in CREDENTIALS if spec.for_tools)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A key and the base URL it goes to; "" means "not given". The repr hides the key."""

    api_key: str = ""
    base_url: str = ""

    def __repr__(self) -> str:
        return f"Endpoint(api_key={'***' if self.api_key else ''!r}, base_url={self.base_url!r})"


def key_problem(key: str) -> str | None:
    """What makes `key` unusable as an API key, or None. Keys travel in HTTP headers,
    which take printable ASCII only; anything else used to surface as a codec's error
    ("'ascii' codec can't encode …") from deep inside an SDK."""
    for position, char in enumerate(key, start=1):
        if "!" <= char <= "~":
            continue
        if char.isspace():
            what = "a space or line break"
        elif char.isprintable():
            what = "a non-ASCII character"
        else:
            what = "a control character"
        # The position, never the character: it is part of a secret.
        return (
            f"contains {what} (character {position} of {len(key)}); API keys are "
            "printable ASCII only: check for a character picked up when copying the key"
        )
    return None


def field_name(source: str, part: str, prefix: str = "") -> str:
    """The proto path of one field, as `BadRequest` violations name it."""
    return f"{prefix}providers[{source}].{part}"


@dataclass(frozen=True, slots=True)
class Credentials:
    """Keys and base URLs by source id; a missing id is the same as an empty Endpoint.

    Secrets: the repr is redacted so a key can never reach a log line by accident.
    """

    providers: Mapping[str, Endpoint] = field(default_factory=dict)

    @classmethod
    def of(cls, **providers: Endpoint) -> Credentials:
        return cls(dict(providers))

    @classmethod
    def from_env(cls, env: Mapping[str, str], ids: tuple[str, ...] = IDS) -> Credentials:
        """ValueError naming the variable when a key cannot be used (`key_problem`)."""
        out: dict[str, Endpoint] = {}
        for source in ids:
            spec = BY_ID[source]
            name = next((name for name in spec.key_envs if env.get(name)), "")
            key = env[name] if name else ""
            problem = key_problem(key)
            if problem is not None:
                raise ValueError(f"{name} {problem}")
            out[source] = Endpoint(key, env.get(spec.base_url_env, ""))
        return cls(out)

    def __repr__(self) -> str:
        present = [
            f"{source}.{part}"
            for source, endpoint in self.providers.items()
            for part in ("api_key", "base_url")
            if getattr(endpoint, part)
        ]
        return f"Credentials(set={present})"

    def get(self, source: str) -> Endpoint:
        return self.providers.get(source) or Endpoint()

    def key(self, source: str) -> str:
        return self.get(source).api_key

    def base_url(self, source: str) -> str:
        return self.get(source).base_url

    def only(self, ids: tuple[str, ...]) -> Credentials:
        """A copy holding just these sources' keys and base URLs."""
        return Credentials({s: self.providers[s] for s in ids if s in self.providers})

    def secrets(self) -> list[str]:
        """The non-empty keys, for redaction."""
        return [e.api_key for e in self.providers.values() if e.api_key]


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
        for source, endpoint in request.providers.items():
            if source not in BY_ID:
                known = ", ".join(IDS)
                out.append(
                    FieldViolation(
                        f"{prefix}providers[{source[:40]}]", f"unknown provider; known: {known}"
                    )
                )
                continue
            problem = key_problem(endpoint.api_key)
            if problem is not None:
                out.append(FieldViolation(field_name(source, "api_key", prefix), problem))
            if not endpoint.base_url:
                continue
            url_name = field_name(source, "base_url", prefix)
            if not self.allow_request_base_urls:
                out.append(
                    FieldViolation(
                        url_name,
                        "this server does not accept base URLs in requests "
                        "(S2C_ALLOW_REQUEST_BASE_URLS is off)",
                    )
                )
            elif not endpoint.api_key:
                out.append(
                    FieldViolation(
                        url_name,
                        f"needs {field_name(source, 'api_key', prefix)} in the same request: "
                        "a request's base URL is only ever used with the request's own key",
                    )
                )
        return out

    def check(self, request: Credentials, *, prefix: str = "") -> None:
        violations = self.violations(request, prefix=prefix)
        if violations:
            raise CredentialsError(violations)

    def endpoint(self, request: Credentials, source: str) -> Endpoint:
        """The key and base URL for `source`, both from one source; "" base URL: the default.

        Raises CredentialsError rather than ever pairing the environment's key with a
        request's base URL, even for a caller that skipped `check`.
        """
        given = request.get(source)
        if given.base_url:
            self.check(request.only((source,)))
            return given
        if given.api_key:
            # The deployment's endpoint, not a secret: upstream sends a request key there too.
            return Endpoint(given.api_key, self.environment.base_url(source))
        return self.environment.get(source)

    def resolve(self, request: Credentials) -> Credentials:
        """Every known source's resolved pair (see `endpoint`), as one Credentials."""
        return Credentials({source: self.endpoint(request, source) for source in IDS})


def credentials_to_proto(credentials: Credentials) -> common_pb2.Credentials:
    return common_pb2.Credentials(
        providers={
            source: common_pb2.ProviderCredentials(api_key=e.api_key, base_url=e.base_url)
            for source, e in credentials.providers.items()
            if e.api_key or e.base_url
        }
    )


def credentials_from_proto(proto: common_pb2.Credentials) -> Credentials:
    return Credentials(
        {source: Endpoint(e.api_key, e.base_url) for source, e in proto.providers.items()}
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
