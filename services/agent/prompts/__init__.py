"""Prompt assembly: the system prompt (`system.py`), the per-strategy user messages
(`pipeline.py`), their texts (`templates.py`) and the file an update starts from
(`file_seed.py`). The agent needs only these names."""

from services.agent.prompts.file_seed import current_file
from services.agent.prompts.pipeline import PromptError, build_prompt_messages

__all__ = ["PromptError", "build_prompt_messages", "current_file"]
