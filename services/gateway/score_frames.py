"""The data of our own score frames (`fidelity`, `unrequestedChanges`): what the built-in
UI draws over its preview. The upstream UI skips frame types it does not know."""

from __future__ import annotations

from typing import Any

from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2

_FIDELITY_FIELDS = (
    ("block_match", "blockMatch"),
    ("text", "text"),
    ("position", "position"),
    ("color", "color"),
    ("visual", "visual"),
)


def fidelity_frame(fidelity: common_pb2.Fidelity) -> dict[str, Any]:
    """A `fidelity` frame's data: null for a metric not computed."""
    data: dict[str, Any] = {
        "imageIndex": fidelity.image_index,
        "viewportWidth": fidelity.viewport_width,
        "unavailableReason": fidelity.unavailable_reason,
        "page": fidelity.path,
    }
    for name, key in _FIDELITY_FIELDS:
        data[key] = getattr(fidelity, name) if fidelity.HasField(name) else None
    data["regions"] = [
        {
            "x": r.x,
            "y": r.y,
            "width": r.width,
            "height": r.height,
            "expectedText": r.expected_text,
            "actualText": r.actual_text,
            "issue": r.issue,
        }
        for r in fidelity.regions
    ]
    return data


def changes_frame(changes: pb.UnrequestedChanges) -> dict[str, Any]:
    """An `unrequestedChanges` frame's data: per width, the boxes of the new page that
    changed beyond the selected element, and the element's own box (null when not found)."""
    return {
        "check": changes.check,
        "summary": changes.summary,
        "widths": [
            {
                "viewportWidth": w.viewport_width,
                "unavailableReason": w.unavailable_reason,
                "target": _box(w.target) if w.HasField("target") else None,
                "regions": [
                    {**_box(r), "beforeText": r.before_text, "afterText": r.after_text}
                    for r in w.regions
                ],
            }
            for w in changes.widths
        ],
    }


def _box(r: common_pb2.ChangedRegion) -> dict[str, int]:
    return {"x": r.x, "y": r.y, "width": r.width, "height": r.height}
