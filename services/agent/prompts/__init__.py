"""Prompt assembly: the system prompt (`system.py`), the per-strategy user messages
(`pipeline.py`) and their texts (`templates.py`). The agent needs only these two names."""

from services.agent.prompts.pipeline import PromptError, build_prompt_messages

__all__ = ["PromptError", "build_prompt_messages"]
