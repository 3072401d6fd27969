"""The file an update starts from when the request carries no `file_state`.

A gRPC or CLI client may send only the conversation; without a file, `edit_file` has
nothing to edit. Like upstream, the file is recovered from the last assistant message
(its text is the page code, possibly wrapped in `<file>` or fenced), and failing that
from the code that follows the legacy marker "Here is the code of the app:" that
older clients put in front of the code.
"""

from __future__ import annotations

from collections.abc import Sequence

from services.agent.domain import FileState, GenerationRequest, HistoryMessage
from services.agent.pages import entry_file
from services.agent.prompts.templates import DEFAULT_FILE_PATH
from services.common.html import extract_html_content

LEGACY_CODE_MARKER = "Here is the code of the app:"


def seed_file_state(history: Sequence[HistoryMessage]) -> FileState | None:
    """The file recovered from `history`, or None when it holds no code."""
    assistant = next((m for m in reversed(history) if m.role == "assistant"), None)
    if assistant is not None and assistant.text.strip():
        # Upstream keeps the text itself when it holds no HTML document; so do we.
        code = extract_html_content(assistant.text)
        if code.strip():
            return FileState(DEFAULT_FILE_PATH, code)
    for message in reversed(history):
        _, marker, after = message.text.rpartition(LEGACY_CODE_MARKER)
        if marker:
            code = extract_html_content(after.strip())
            if code.strip():
                return FileState(DEFAULT_FILE_PATH, code)
    return None


def current_file(request: GenerationRequest) -> FileState | None:
    """The file an update's variants start from: the project's entry page, else
    `file_state`, else the last version in the history."""
    if request.files:
        return entry_file(request.files)
    if request.file_state is not None:
        return request.file_state
    if request.generation_type != "update":
        return None
    return seed_file_state(request.history)
