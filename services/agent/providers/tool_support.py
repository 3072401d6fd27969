"""How OpenAI-compatible servers say that a request's tools cannot be taken.

A request with `tools` to a model or server without tool calling is refused with an
error status whose message says so; each server has its own wording (docs/models.md
lists them, with where each comes from). Only these refusals lead to a retry without
tools: any other 400 is a real error of the request and is reported as such.
"""

from __future__ import annotations

import re

# The statuses such a refusal comes with: 400 (Ollama, vLLM, LM Studio), 500 (llama.cpp's
# server raises it as a server error).
REFUSAL_STATUSES = frozenset({400, 500})

_REFUSALS = re.compile(
    "|".join(
        (
            # Ollama: "registry.ollama.ai/library/gemma3:4b does not support tools"
            # (older versions name the model alone: "codellama:latest does not …").
            r"does not support tools",
            # llama.cpp's llama-server started without --jinja.
            r"tools param requires --jinja flag",
            # llama.cpp before the --jinja tool support.
            r"unsupported param: tools",
            # vLLM started without tool parsing: the default tool_choice with tools is
            # "auto", which it refuses.
            r'"auto" tool choice requires --enable-auto-tool-choice',
        )
    ),
    re.IGNORECASE,
)


def refuses_tools(status: int, message: str) -> bool:
    """Whether an error `status` with `message` is a server refusing the request's tools."""
    return status in REFUSAL_STATUSES and _REFUSALS.search(message) is not None
