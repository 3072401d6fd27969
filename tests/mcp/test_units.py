"""The MCP server's parts that need no suite: who may serve and use /mcp, and results."""

from __future__ import annotations

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import TextContent
from s2c.agent.v1 import agent_service_pb2 as pb

from services.gateway.access import AccessSettings
from services.gateway.limits import CaptureLimiter, ClientLimiter
from services.gateway.mcp_access import McpAccess
from services.gateway.mcp_route import CLIENT_STATE, ClientAdmission
from services.gateway.settings import GatewaySettings
from services.mcp.arguments import update_request
from services.mcp.results import generation_result

TOKEN = "mcp-test-token-0123456789"


def test_the_gateway_refuses_to_serve_mcp_beyond_loopback_without_a_token() -> None:
    with pytest.raises(ValueError, match="S2C_MCP_TOKEN"):
        GatewaySettings(host="0.0.0.0")
    assert GatewaySettings(host="0.0.0.0", mcp=McpAccess(token=TOKEN)).mcp.token == TOKEN
    assert not GatewaySettings(host="0.0.0.0", mcp=McpAccess(enabled=False)).mcp.enabled
    assert GatewaySettings(host="::1").host == "::1"
    env = {"S2C_MCP": "off"}
    assert McpAccess.from_env(env) == McpAccess(enabled=False)
    assert TOKEN not in repr(McpAccess(token=TOKEN))


def test_a_generating_or_capturing_call_holds_one_of_its_clients_places() -> None:
    access = AccessSettings(max_concurrent_per_client=1, capture_max_per_client=1)
    admission = ClientAdmission(ClientLimiter(access), CaptureLimiter(access))

    class Request:
        def __init__(self, client: str) -> None:
            self.scope = {"state": {CLIENT_STATE: client}}

    with admission.admit(Request("10.0.0.1")):
        with pytest.raises(ToolError, match="Too many concurrent generations"):
            with admission.admit(Request("10.0.0.1")):
                pass
        with admission.admit(Request("10.0.0.2")):
            pass
    with admission.admit(Request("10.0.0.1")):
        pass
    with admission.admit_capture(Request("10.0.0.1")):
        with pytest.raises(ToolError, match="Too many URL captures"):
            with admission.admit_capture(Request("10.0.0.1")):
                pass
        with admission.admit(Request("10.0.0.1")):  # a generation is not a capture
            pass


def test_a_failed_generation_is_a_tool_error_with_each_options_reason() -> None:
    record = pb.Generation(generation_id="g-1", status=pb.RUN_STATUS_FAILED)
    record.variants.add(
        variant_index=0, model="gpt-x", status=pb.RUN_STATUS_FAILED, error="Rate limited: retry"
    )
    ran = generation_result(record, {}, with_files=True, ran=True)
    assert ran.is_error
    text = " ".join(c.text for c in ran.content if isinstance(c, TextContent))
    assert "option 0 (gpt-x): failed, no files, unpriced: Rate limited: retry" in text
    # The same record read back is an answer, not an error.
    assert not generation_result(record, {}, with_files=False, ran=False).is_error


def test_an_update_about_one_element_carries_it_for_the_change_check() -> None:
    record = pb.Generation(
        generation_id="g",
        variants=[pb.VariantRecord(variant_index=0, code="<h1>Hi</h1><p>x</p>")],
    )
    request = update_request(record, 0, "Bigger", "<h1>Hi</h1>", "html_tailwind", 1)
    assert request.prompt.selected_element_html == "<h1>Hi</h1>"
    assert request.prompt.full_text.endswith("<h1>Hi</h1>")
    plain = update_request(record, 0, "Bigger", " ", "html_tailwind", 1)
    assert plain.prompt.selected_element_html == ""
