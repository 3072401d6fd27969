"""Prompt assembly: the system prompt and the per-strategy user messages."""

from services.agent.prompts.pipeline import (
    PromptError,
    Strategy,
    build_prompt_messages,
    select_strategy,
)
from services.agent.prompts.system import BABEL_STANDALONE_URL, PERSONA, build_system_prompt
from services.agent.prompts.templates import (
    IMAGE_GENERATION_OFF,
    IMAGE_GENERATION_ON,
    asset_id_block,
    design_system_block,
    image_policy,
)

__all__ = [
    "BABEL_STANDALONE_URL",
    "IMAGE_GENERATION_OFF",
    "IMAGE_GENERATION_ON",
    "PERSONA",
    "PromptError",
    "Strategy",
    "asset_id_block",
    "build_prompt_messages",
    "build_system_prompt",
    "design_system_block",
    "image_policy",
    "select_strategy",
]
