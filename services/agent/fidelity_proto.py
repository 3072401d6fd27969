"""Fidelity scores ⇄ their proto (events, records, the tool service's answers)."""

from __future__ import annotations

from s2c.common.v1 import common_pb2

from services.agent import events as ev

FIDELITY_METRICS = ("block_match", "text", "position", "color", "visual")


def fidelity_to_proto(fidelity: ev.Fidelity) -> common_pb2.Fidelity:
    out = common_pb2.Fidelity(
        image_index=fidelity.image_index,
        viewport_width=fidelity.viewport_width,
        unavailable_reason=fidelity.unavailable_reason,
        path=fidelity.path,
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
        **values,
    )
