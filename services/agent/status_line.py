"""A variant's status line at its start: what generates it, and what the user should know."""

from __future__ import annotations

from collections.abc import Mapping

from services.agent.models import ModelSpec
from services.agent.providers import registry

GENERATING = "Generating code..."
DEMO_STATUS = (
    "Generating code with the built-in demo model: no model API key is configured. "
    f"Set {registry.key_envs_text()} (or add a key in the settings dialog) to use a real "
    "model."
)
# Appended to each variant's status line when the run record could not be saved: the
# client learns the run will be missing from the history (the cause is in the agent's log).
RECORD_NOT_SAVED = (
    "Note: this run's record could not be saved (the agent's run store is failing); "
    "the code is still generated."
)
# Appended for each tool a worker is set up to run but cannot now, e.g. screenshot_preview
# when its browser does not launch: the model works without it, and the user knows why.
TOOL_UNAVAILABLE = "Note: {name} is unavailable ({reason}), so the model works without it."


def status_line(spec: ModelSpec, saved: bool, unavailable: Mapping[str, str]) -> str:
    """A variant's status at its start: what generates it, and what the client should know
    (a record that could not be saved, tools the workers cannot run now)."""
    parts = [DEMO_STATUS if spec.provider == "demo" else GENERATING]
    if not saved:
        parts.append(RECORD_NOT_SAVED)
    parts += [TOOL_UNAVAILABLE.format(name=n, reason=r) for n, r in sorted(unavailable.items())]
    return " ".join(parts)
