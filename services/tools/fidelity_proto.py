"""FidelityOutcome → its protos (the tool service's answer; the agent reads them back)."""

from __future__ import annotations

from s2c.common.v1 import common_pb2
from s2c.tools.v1 import tool_service_pb2 as pb

from services.fidelity.changes import Box
from services.tools.changes import WidthChanges
from services.tools.fidelity import FidelityOutcome


def fidelity_proto(outcome: FidelityOutcome) -> common_pb2.Fidelity:
    message = common_pb2.Fidelity(
        image_index=outcome.image_index,
        viewport_width=outcome.viewport_width,
        unavailable_reason=outcome.unavailable_reason,
        path=outcome.path,
    )
    if outcome.scores is not None:
        for name, value in outcome.scores.as_dict().items():
            if value is not None:
                setattr(message, name, value)
    return message


def fidelity_response(outcome: FidelityOutcome) -> pb.ScoreFidelityResponse:
    return pb.ScoreFidelityResponse(
        fidelity=fidelity_proto(outcome),
        regions=[
            pb.FidelityRegion(
                x=r.x,
                y=r.y,
                width=r.width,
                height=r.height,
                expected_text=r.expected_text,
                actual_text=r.actual_text,
                issue=r.issue,
            )
            for r in outcome.regions
        ],
        comparison_png=outcome.comparison_png,
    )


def changes_response(widths: tuple[WidthChanges, ...]) -> pb.CompareRendersResponse:
    return pb.CompareRendersResponse(widths=[_width_proto(w) for w in widths])


def _width_proto(width: WidthChanges) -> common_pb2.ChangedWidth:
    out = common_pb2.ChangedWidth(
        viewport_width=width.width,
        unavailable_reason=width.unavailable_reason,
        regions=[
            _region(c.box, before_text=c.before_text, after_text=c.after_text)
            for c in width.changes
        ],
    )
    if width.target is not None:
        out.target.CopyFrom(_region(width.target))
    return out


def _region(box: Box, **texts: str) -> common_pb2.ChangedRegion:
    return common_pb2.ChangedRegion(x=box.x, y=box.y, width=box.width, height=box.height, **texts)
