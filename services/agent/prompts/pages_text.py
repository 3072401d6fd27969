"""What the prompt says about tagged screenshots (pages.py) and about a project of files."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from services.agent.domain import FileState
from services.agent.pages import PagePlan


def _shots(indexes: Sequence[int], widths: Sequence[int | None]) -> str:
    return ", ".join(
        f"Screenshot {i + 1}" + (f" at {widths[n]} px" if widths[n] else "")
        for n, i in enumerate(indexes)
    )


def page_plan_block(plan: PagePlan, image_widths: Sequence[int | None]) -> str:
    """The block for a create's tagged screenshots; empty when the tags say nothing new.

    `image_widths` is each image's tagged width (None: untagged), in request order.
    """
    if plan.multi_page:
        lines = [
            f"## Pages\nThe screenshots show {len(plan.pages)} pages of one site. Build one "
            "HTML file per page with `create_file` (its `path` as below), each a complete "
            "document, index.html first:"
        ]
        for page in plan.pages:
            shots = _shots(page.images, [image_widths[i] for i in page.images])
            lines.append(f'- {page.path}: the page "{page.name}" ({shots or "no screenshot"})')
        lines.append(
            "Link the pages to each other with relative links (e.g. "
            f'href="{plan.pages[1].path}"), give them the same navigation, header and footer, '
            "and keep what they share consistent; shared CSS or JavaScript may go in its own "
            ".css or .js file, linked by a relative path."
        )
        if plan.widths:
            lines.append(_responsive_line(plan.widths))
        return "\n".join(lines)
    widths = plan.widths
    if not widths:
        return ""
    page = plan.pages[0]
    if len(widths) == 1:
        return f"## Screenshot width\nThe screenshots were taken {widths[0]} px wide."
    shots = _shots(page.images, [image_widths[i] for i in page.images])
    named = ", ".join(f"{w} px" for w in widths)
    return (
        f"## Screenshot widths\nThe screenshots show one page at {len(widths)} viewport "
        f"widths ({named}): {shots}. Build one responsive page in {page.path} that matches "
        "each screenshot at its own width, with the stack's responsive breakpoints between "
        "them, not a separate page per width. " + _responsive_line(widths)
    )


def _responsive_line(widths: Sequence[int]) -> str:
    named = ", ".join(f"{w} px" for w in widths)
    return f"`screenshot_preview` captures the current page at {named} wide, in that order."


def other_files_block(files: Sequence[FileState], current: str, tools: Collection[str]) -> str:
    """The project's files besides `current` (an update of a site of several files)."""
    others = [f for f in files if f.path != current]
    if not others:
        return ""
    with_tool = " (`edit_file` with its `path`)" if "edit_file" in tools else ""
    parts = [
        f"The project has {len(files)} files, linked by relative paths; the change may touch "
        f"any of them{with_tool}. Its other files:"
    ]
    parts += [f'<project_file path="{f.path}">\n{f.content}\n</project_file>' for f in others]
    return "\n\n".join(parts)
