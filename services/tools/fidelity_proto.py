"""FidelityOutcome → its protos (the tool service's answer; the agent reads them back)."""

from __future__ import annotations

from s2c.common.v1 import common_pb2
from s2c.tools.v1 import tool_service_pb2 as pb

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
