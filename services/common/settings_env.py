"""Reading settings from the environment: the parsing rules the three services share.

Each service's `Settings.from_env` reads its variables through these, so a bad value gets
the same kind of message whichever service reads it, naming the variable and the value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict, TypeVar

from services.common.security import GrpcSecurity

_N = TypeVar("_N", int, float)


class ServiceFields(TypedDict):
    """The settings every service has and reads alike: `cls(**service_fields(env), …)`."""

    data_dir: Path
    grpc_security: GrpcSecurity


def environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    """The mapping to read: `env` when a caller (a test) gives one, else the process's."""
    return os.environ if env is None else env


def service_fields(env: Mapping[str, str]) -> ServiceFields:
    """`S2C_DATA_DIR` (every service keeps its own files below it) and the gRPC hops'
    TLS and token."""
    return ServiceFields(
        data_dir=Path(env.get("S2C_DATA_DIR", ".s2c-data")),
        grpc_security=GrpcSecurity.from_env(env),
    )


def positive(env: Mapping[str, str], name: str, default: float, *, unit: str = "number") -> float:
    """A number > 0; unset or blank gives `default`. `unit` names it in the error."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a {unit}, got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {raw!r}")
    return value


def seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A number of seconds ≥ 0 (0: at once); unset or blank gives `default`."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"{name} must be a number of seconds >= 0, got {raw!r}")
    return value


def integer(env: Mapping[str, str], name: str, default: int) -> int:
    """Any integer; unset or blank gives `default`."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


def bound(env: Mapping[str, str], name: str, default: str, kind: type[_N]) -> _N:
    """A limit ≥ 0 where 0 means no limit."""
    raw = env.get(name, default)
    try:
        value = kind(raw)
    except ValueError:
        value = kind(-1)
    if value < 0:
        raise ValueError(f"{name} must be a non-negative number (0: no bound), got {raw!r}")
    return value
