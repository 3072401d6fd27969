"""Named model endpoints: the operator's models file (`S2C_MODELS_FILE`, docs/models.md).

Each `[[endpoint]]` is one server speaking one wire format (`chat`: Chat Completions,
`responses`: the Responses API, `azure`: Azure OpenAI through the SDK's Azure client),
with its models as `[[endpoint.model]]` tables; requests name them `<endpoint>:<model>`.

Parsing is strict: a file that does not parse, a field this module does not know, a value
of the wrong type or a key variable that is not set stops the agent at start, the error
naming the file, the line and the field. A key comes only from the variable the endpoint
names (for Azure, the SDK's `AZURE_OPENAI_API_KEY` by default) and goes only to that
endpoint. A leaf: it imports nothing of the agent (settings.py reads the file with it).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.common.credentials import key_problem

MODELS_FILE_ENV = "S2C_MODELS_FILE"
APIS = ("chat", "responses", "azure")
# Names a file may not give an endpoint: ids with these prefixes mean something already.
RESERVED = frozenset({"openrouter", "demo"})
# The Azure client's own variables, read as the openai SDK reads them.
AZURE_KEY_ENV = "AZURE_OPENAI_API_KEY"
AZURE_ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
AZURE_VERSION_ENV = "OPENAI_API_VERSION"

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")
# The key an SDK is given for an endpoint that takes none (the SDK refuses to start
# without one; such servers ignore it).
PLACEHOLDER_KEY = "not-needed"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_ENDPOINT_FIELDS = frozenset({"name", "api", "base_url", "api_key_env", "api_version", "model"})
_MODEL_FIELDS = frozenset({"id", "vision", "tools", "price_in", "price_out", "deployment"})


class ModelsFileError(ValueError):
    """What is wrong with the models file, naming the file, the line and the field."""


@dataclass(frozen=True, slots=True)
class EndpointModel:
    id: str  # the model part of `<endpoint>:<id>`, and the name sent to the API
    vision: bool = True  # False: image and video input are refused for it
    tools: bool = True  # False: no tools are offered (the page comes as text)
    price_in: float | None = None  # USD per million tokens; None: unpriced
    price_out: float | None = None
    deployment: str = ""  # Azure: the deployment serving it ("": its id)

    @property
    def api_name(self) -> str:
        return self.deployment or self.id


@dataclass(frozen=True, slots=True)
class ModelEndpoint:
    name: str
    api: str  # one of APIS
    base_url: str
    api_key_env: str = ""  # the variable the key came from ("": no key)
    api_key: str = field(default="", repr=False)  # a secret: never logged, never shown
    api_version: str = ""  # Azure only
    models: tuple[EndpointModel, ...] = ()

    def model(self, model_id: str) -> EndpointModel | None:
        return next((m for m in self.models if m.id == model_id), None)


def load(path: str, env: Mapping[str, str]) -> tuple[ModelEndpoint, ...]:
    """The endpoints of the file at `path`; ModelsFileError saying what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelsFileError(f"{MODELS_FILE_ENV} {path}: cannot read it ({exc})") from None
    return parse(text, env, path)


def parse(
    text: str, env: Mapping[str, str], source: str = "models file"
) -> tuple[ModelEndpoint, ...]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ModelsFileError(f"{source}: not valid TOML: {exc}") from None
    return _Reader(text, env, source).endpoints(data)


class _Reader:
    def __init__(self, text: str, env: Mapping[str, str], source: str) -> None:
        self._lines = _key_lines(text)
        self._env = env
        self._source = source

    def fail(self, where: tuple[int, int], key: str, problem: str) -> ModelsFileError:
        endpoint, model = where
        path = key
        if endpoint >= 0:
            path = f"endpoint[{endpoint}]" + (f".model[{model}]" if model >= 0 else "")
            path = f"{path}.{key}" if key else path
        line = self._lines.get((endpoint, model, key)) or self._lines.get((endpoint, model, ""))
        at = f", line {line}" if line else ""
        return ModelsFileError(f"{self._source}{at}: {path}: {problem}")

    def endpoints(self, data: dict[str, Any]) -> tuple[ModelEndpoint, ...]:
        for key in data:
            if key != "endpoint":
                raise self.fail((-1, -1), key, "unknown field (the file holds [[endpoint]] tables)")
        tables = data.get("endpoint", [])
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise self.fail((-1, -1), "endpoint", "must be [[endpoint]] tables")
        out: list[ModelEndpoint] = []
        for i, table in enumerate(tables):
            endpoint = self._endpoint(i, table)
            if any(e.name == endpoint.name for e in out):
                raise self.fail((i, -1), "name", f"a second endpoint named {endpoint.name!r}")
            out.append(endpoint)
        return tuple(out)

    def _endpoint(self, i: int, table: dict[str, Any]) -> ModelEndpoint:
        at = (i, -1)
        self._known(at, table, _ENDPOINT_FIELDS)
        name = self._str(at, table, "name", required=True)
        if not _NAME.fullmatch(name):
            raise self.fail(at, "name", "must be 1-40 letters, digits, '.', '-' or '_'")
        if name in RESERVED:
            raise self.fail(at, "name", f"{name!r} is reserved (its ids mean something already)")
        api = self._str(at, table, "api") or "chat"
        if api not in APIS:
            raise self.fail(at, "api", f"must be one of {', '.join(APIS)}, got {api[:40]!r}")
        azure = api == "azure"
        base_url = self._str(at, table, "base_url") or (
            self._env.get(AZURE_ENDPOINT_ENV, "") if azure else ""
        )
        if not base_url.startswith(("http://", "https://")):
            missing = f" (or set {AZURE_ENDPOINT_ENV})" if azure else ""
            raise self.fail(at, "base_url", f"needs an http:// or https:// URL{missing}")
        version = self._str(at, table, "api_version")
        if version and not azure:
            raise self.fail(at, "api_version", 'is for api = "azure" only')
        if azure and not version:
            version = self._env.get(AZURE_VERSION_ENV, "")
            if not version:
                raise self.fail(at, "api_version", f"is required (or set {AZURE_VERSION_ENV})")
        key_env = self._str(at, table, "api_key_env") or (AZURE_KEY_ENV if azure else "")
        key = self._key(at, key_env)
        models = table.get("model", [])
        if not isinstance(models, list) or not models:
            raise self.fail(at, "model", "needs at least one [[endpoint.model]] table")
        read = [self._model((i, j), m, azure) for j, m in enumerate(models)]
        for j, model in enumerate(read):
            if any(m.id == model.id for m in read[:j]):
                raise self.fail((i, j), "id", f"a second model {model.id!r} in {name!r}")
        return ModelEndpoint(name, api, base_url.rstrip("/"), key_env, key, version, tuple(read))

    def _key(self, at: tuple[int, int], key_env: str) -> str:
        if not key_env:
            return ""
        if not _ENV_NAME.fullmatch(key_env):
            raise self.fail(at, "api_key_env", "must name an environment variable")
        key = self._env.get(key_env, "")
        if not key:
            raise self.fail(at, "api_key_env", f"names {key_env}, which is not set")
        problem = key_problem(key)
        if problem is not None:
            raise self.fail(at, "api_key_env", f"{key_env} {problem}")
        return key

    def _model(self, at: tuple[int, int], table: Any, azure: bool) -> EndpointModel:
        if not isinstance(table, dict):
            raise self.fail(at, "", "must be an [[endpoint.model]] table")
        self._known(at, table, _MODEL_FIELDS)
        model_id = self._str(at, table, "id", required=True)
        if len(model_id) > 200 or any(c.isspace() for c in model_id):
            raise self.fail(at, "id", "must be 1-200 characters without spaces")
        deployment = self._str(at, table, "deployment")
        if deployment and not azure:
            raise self.fail(at, "deployment", 'is for api = "azure" only')
        return EndpointModel(
            model_id,
            self._bool(at, table, "vision"),
            self._bool(at, table, "tools"),
            self._price(at, table, "price_in"),
            self._price(at, table, "price_out"),
            deployment,
        )

    def _known(self, at: tuple[int, int], table: dict[str, Any], known: frozenset[str]) -> None:
        for key in table:
            if key not in known:
                raise self.fail(at, key, f"unknown field; known: {', '.join(sorted(known))}")

    def _str(
        self, at: tuple[int, int], table: dict[str, Any], key: str, *, required: bool = False
    ) -> str:
        value = table.get(key, "")
        if not isinstance(value, str):
            raise self.fail(at, key, f"must be a string, got {type(value).__name__}")
        if required and not value.strip():
            raise self.fail(at, key, "is required")
        return value.strip()

    def _bool(self, at: tuple[int, int], table: dict[str, Any], key: str) -> bool:
        value = table.get(key, True)
        if not isinstance(value, bool):
            raise self.fail(at, key, f"must be true or false, got {type(value).__name__}")
        return value

    def _price(self, at: tuple[int, int], table: dict[str, Any], key: str) -> float | None:
        value = table.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise self.fail(at, key, "must be a number of US dollars per million tokens, >= 0")
        return float(value)


_HEADER = re.compile(r"\[\[\s*([A-Za-z0-9_.\s]+?)\s*\]\]")
_KEY = re.compile(r"""\s*(?:"([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*=""")


def _key_lines(text: str) -> dict[tuple[int, int, str], int]:
    """Line numbers by (endpoint index, model index, key), for errors: tomllib gives the
    values without their places. -1 stands for "not in one"; key "" for the table's
    header. Keys of inline tables are not placed (the error names the table's line)."""
    lines: dict[tuple[int, int, str], int] = {}
    endpoint = model = -1
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line.strip())
        if header:
            name = re.sub(r"\s+", "", header.group(1))
            if name == "endpoint":
                endpoint, model = endpoint + 1, -1
            elif name == "endpoint.model":
                model += 1
            lines.setdefault((endpoint, model, ""), number)
            continue
        key = _KEY.match(line)
        if key:
            name = next(g for g in key.groups() if g is not None)
            lines.setdefault((endpoint, model, name), number)
    return lines
