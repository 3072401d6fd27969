"""Enum tables derived from the proto descriptors."""

from __future__ import annotations

import pytest
from s2c.agent.v1 import agent_service_pb2 as pb

from services.common.proto_enums import enum_names, enum_values


def test_each_value_maps_to_the_name_it_spells_and_unspecified_to_the_default() -> None:
    stacks = enum_names(
        pb.Stack,
        (
            "html_css",
            "html_tailwind",
            "react_tailwind",
            "bootstrap",
            "vue_tailwind",
            "ionic_tailwind",
            "react_vite",
        ),
        "html_tailwind",
    )
    assert stacks[pb.STACK_UNSPECIFIED] == "html_tailwind"
    assert stacks[pb.STACK_HTML_CSS] == "html_css"
    assert stacks[pb.STACK_IONIC_TAILWIND] == "ionic_tailwind"
    assert len(stacks) == len(pb.Stack.DESCRIPTOR.values)
    assert enum_names(pb.CaptureFormat, ("", "png", "jpeg"), "") == {
        pb.CAPTURE_FORMAT_UNSPECIFIED: "",
        pb.CAPTURE_FORMAT_PNG: "png",
        pb.CAPTURE_FORMAT_JPEG: "jpeg",
    }


def test_a_proto_value_without_a_domain_name_is_refused() -> None:
    with pytest.raises(ValueError, match="INPUT_MODE_VIDEO spells none of"):
        enum_names(pb.InputMode, ("image", "text"), "image")


def test_clients_take_every_set_value_by_the_name_it_spells() -> None:
    stacks = enum_values(pb.Stack)
    assert list(stacks)[:2] == ["html_tailwind", "html_css"]  # the proto's order
    assert "unspecified" not in stacks
    assert pb.GenerateCodeRequest(stack=stacks["bootstrap"]).stack == pb.STACK_BOOTSTRAP
