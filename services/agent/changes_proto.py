"""An update's change check (guard.py) ⇄ its protos: the tool service's answer read, the
agent's event and run record written."""

from __future__ import annotations

from collections.abc import Iterable

from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2

from services.agent.events import ChangedRegion, ChangedWidth, UnrequestedChanges


def widths_from_proto(widths: Iterable[common_pb2.ChangedWidth]) -> tuple[ChangedWidth, ...]:
    return tuple(
        ChangedWidth(
            w.viewport_width,
            tuple(_region(r) for r in w.regions),
            _region(w.target) if w.HasField("target") else None,
            w.unavailable_reason,
        )
        for w in widths
    )


def _region(r: common_pb2.ChangedRegion) -> ChangedRegion:
    return ChangedRegion(r.x, r.y, r.width, r.height, r.before_text, r.after_text)


def changes_to_proto(changes: UnrequestedChanges) -> pb.UnrequestedChanges:
    return pb.UnrequestedChanges(
        check=changes.check,
        summary=changes.summary,
        widths=[_width_proto(w) for w in changes.widths],
    )


def _width_proto(width: ChangedWidth) -> common_pb2.ChangedWidth:
    out = common_pb2.ChangedWidth(
        viewport_width=width.viewport_width,
        regions=[_region_proto(r) for r in width.regions],
        unavailable_reason=width.unavailable_reason,
    )
    if width.target is not None:
        out.target.CopyFrom(_region_proto(width.target))
    return out


def _region_proto(r: ChangedRegion) -> common_pb2.ChangedRegion:
    return common_pb2.ChangedRegion(
        x=r.x,
        y=r.y,
        width=r.width,
        height=r.height,
        before_text=r.before_text,
        after_text=r.after_text,
    )
