"""Text mode's run-time parts: a generation's two prompts, and the agent's memory of the
models whose servers refused tools (docs/models.md).

A model with `tools = false` runs in text mode from the start. A model whose server
answers a request with tools by saying it cannot take them (providers/tool_support.py)
is asked again once in text mode, and remembered: its later variants start in text mode.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from services.agent.domain import GenerationRequest
from services.agent.prompts import PromptError, build_prompt_messages
from services.agent.providers.base import PromptMessage, ToolSpec

# Models the memory keeps (the least recently refused ones go first): an agent meets a
# handful of endpoint models; the bound only keeps a flood of request-named ids small.
TOOLLESS_CAPACITY = 256


class ToollessModels:
    """The model ids whose servers refused tools, most recent last, at most `capacity`.

    An id names its endpoint and model together (`local:<model>`, `<endpoint>:<model>`),
    so it is the key. Held by the agent's runner: in-process, forgotten on restart (a
    server that gains tool support is tried with tools again then)."""

    def __init__(self, capacity: int = TOOLLESS_CAPACITY) -> None:
        self._capacity = capacity
        self._ids: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, model_id: str) -> bool:
        return model_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, model_id: str) -> None:
        self._ids[model_id] = None
        self._ids.move_to_end(model_id)
        while len(self._ids) > self._capacity:
            self._ids.popitem(last=False)


@dataclass
class GenerationPrompts:
    """A generation's messages: with its tools, and (built on first need) text mode's."""

    request: GenerationRequest
    messages: tuple[PromptMessage, ...]
    tools: tuple[ToolSpec, ...]
    _text: tuple[PromptMessage, ...] | None = field(default=None, repr=False)

    @classmethod
    def build(
        cls,
        request: GenerationRequest,
        tools: Sequence[ToolSpec],
        names: set[str],
        uploaded: Mapping[str, str] | None,
    ) -> GenerationPrompts:
        messages = build_prompt_messages(request, tools=names, uploaded_asset_ids=uploaded)
        return cls(request, tuple(messages), tuple(tools))

    def text(self) -> tuple[PromptMessage, ...]:
        """Text mode's messages (raises PromptError as the tool prompt would)."""
        if self._text is None:
            self._text = tuple(build_prompt_messages(self.request, text_mode=True))
        return self._text


__all__ = ["GenerationPrompts", "PromptError", "ToollessModels"]
