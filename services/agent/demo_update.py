"""The demo model's update: the request becomes a visible note on the current page.

The demo model cannot interpret an instruction, but it must not throw the page away
either (a fresh page titled with the instruction reads as "edits don't work"). So it
edits the file the update starts from with one `edit_file`: a note showing the request
goes in right after `<body>`, and everything else stays byte for byte. A later demo
update replaces its own earlier note instead of stacking another one.

The note is fixed-positioned with inline styles, so it shows on every stack (Ionic's
`ion-app` covers the body's normal flow) without depending on the page's CSS; `v-pre`
keeps Vue from compiling the instruction if the body itself is the mount point. The
instruction is untrusted: it is HTML-escaped, so it can never leave the note's text.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from services.agent.domain import FileState

NOTE_START = "<!-- s2c-demo-note -->"
NOTE_END = "<!-- /s2c-demo-note -->"
NOTE_HEADING = "Demo model: your request"
NOTE_EXPLAINER = (
    "Shown here by the built-in demo model, which does not interpret requests. "
    "With a model API key, a real model edits the page to do this."
)
_MAX_INSTRUCTION = 300
_BODY_OPEN = re.compile(r"<body\b[^>]{0,4096}>", re.IGNORECASE)
# Without a <body> tag the note goes first; this much of the file anchors the edit.
_ANCHOR_CHARS = 120
_NOTE_STYLE = (
    "position:fixed;right:16px;bottom:16px;z-index:2147483647;"
    "max-width:min(380px,calc(100vw - 32px));padding:14px 16px;border-radius:14px;"
    "background:#0f172a;color:#f8fafc;font:14px/1.45 system-ui,-apple-system,sans-serif;"
    "text-align:left;box-shadow:0 12px 32px rgba(15,23,42,.35)"
)


@dataclass(frozen=True, slots=True)
class DemoEdit:
    """One `edit_file` replacement and what it does, in words for the summary."""

    old_text: str
    new_text: str
    replaces_note: bool


def note_html(instruction: str) -> str:
    """The note element, between its markers, showing `instruction` (escaped)."""
    text = " ".join(instruction.split())
    if len(text) > _MAX_INSTRUCTION:
        text = text[: _MAX_INSTRUCTION - 1] + "\u2026"
    shown = f"\u201c{html.escape(text)}\u201d" if text else "(the update had no instruction text)"
    return (
        f"{NOTE_START}\n"
        f'<aside data-s2c-demo-note v-pre role="note" style="{_NOTE_STYLE}">'
        f'<strong style="display:block;margin-bottom:4px;color:#fbbf24">{NOTE_HEADING}</strong>'
        f"<span data-s2c-demo-request>{shown}</span>"
        f'<span style="display:block;margin-top:6px;opacity:.75">{NOTE_EXPLAINER}</span>'
        f"</aside>\n{NOTE_END}"
    )


def demo_edit(file: FileState, instruction: str) -> DemoEdit:
    """The replacement that shows `instruction` on `file`'s page.

    `old_text` is always the first occurrence of itself in the file, so `edit_file`
    with count 1 changes exactly the spot chosen here.
    """
    content = file.content
    note = note_html(instruction)
    start = content.find(NOTE_START)
    end = content.find(NOTE_END, start) if start != -1 else -1
    if end != -1:
        return DemoEdit(content[start : end + len(NOTE_END)], note, replaces_note=True)
    body = _BODY_OPEN.search(content)
    if body is not None:
        tag = body.group(0)
        return DemoEdit(tag, f"{tag}\n{note}", replaces_note=False)
    anchor = content[:_ANCHOR_CHARS]
    return DemoEdit(anchor, f"{note}\n{anchor}", replaces_note=False)
