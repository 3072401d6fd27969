"""Fidelity scores ⇄ their proto (events, records, the tool service's answers)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from s2c.common.v1 import common_pb2

from services.agent import events as ev

FIDELITY_METRICS = ("block_match", "text", "position", "color", "visual")


def fidelity_to_proto(fidelity: ev.Fidelity) -> common_pb2.Fidelity:
    out = common_pb2.Fidelity(
        image_index=fidelity.image_index,
        viewport_width=fidelity.viewport_width,
        unavailable_reason=fidelity.unavailable_reason,
        path=fidelity.path,
        regions=[
            common_pb2.FidelityRegion(
                x=r.x,
                y=r.y,
                width=r.width,
                height=r.height,
                expected_text=r.expected_text,
                actual_text=r.actual_text,
                issue=r.issue,
            )
            for r in fidelity.regions
        ],
    )
    for name in FIDELITY_METRICS:
        value = getattr(fidelity, name)
        if value is not None:
            setattr(out, name, value)
    return out


def fidelity_from_proto(message: common_pb2.Fidelity) -> ev.Fidelity:
    values = {n: getattr(message, n) if message.HasField(n) else None for n in FIDELITY_METRICS}
    return ev.Fidelity(
        message.image_index,
        message.viewport_width,
        unavailable_reason=message.unavailable_reason,
        path=message.path,
        regions=regions_from_proto(message.regions),
        **values,
    )


class _RegionMessage(Protocol):
    x: int
    y: int
    width: int
    height: int
    expected_text: str
    actual_text: str
    issue: str


def regions_from_proto(regions: Iterable[_RegionMessage]) -> tuple[ev.FidelityRegion, ...]:
    """The regions of a `Fidelity`, or of the tool service's answer (its own message of
    the same fields)."""
    return tuple(
        ev.FidelityRegion(r.x, r.y, r.width, r.height, r.expected_text, r.actual_text, r.issue)
        for r in regions
    )
