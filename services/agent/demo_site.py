"""The demo model given tagged screenshots (pages.py): a small linked site when they name
several pages, a responsive page when they show one page at several widths.

Each page of a site is the demo page (demo_pages.py) with a navigation bar linking every
page by a relative path, and a banner naming the page, so the links visibly lead
somewhere. A responsive page is the demo page itself, which already adapts to any width;
the script says which widths it checks, and `screenshot_preview` captures those.
"""

from __future__ import annotations

import html
import re
from collections.abc import Collection, Sequence

from services.agent.demo_pages import demo_page, demo_title
from services.agent.pages import PagePlan
from services.agent.providers.scripted import Say, ScriptedTurn, Think, call_tool, chunk_text

_TEXT_CHUNK = 12
_BODY = re.compile(r"<body\b[^>]*>", re.I)


SITE_CSS = "site.css"
# What every page shares, in the shared stylesheet each page links by a relative path.
_SHARED_CSS = """[data-demo-site] {
  position: relative; z-index: 60; padding: .75rem 1.5rem;
  font: 600 15px system-ui; background: #111827; color: #f9fafb;
}
[data-demo-site] a { margin-right: 1rem; color: inherit; }
[data-demo-page] {
  margin: 0; padding: .5rem 1.5rem; font: 14px system-ui; background: #e5e7eb; color: #111827;
}
"""


def site_pages(prompt_text: str, stack: str, variant_index: int, plan: PagePlan) -> dict[str, str]:
    """Every file of the demo site, by path: the entry page first, the shared stylesheet last."""
    base = demo_page(prompt_text, stack, variant_index)
    links = "".join(
        f'<a href="{page.path}">'
        f"{html.escape(page.name.replace('-', ' ').replace('_', ' ').title())}</a>"
        for page in plan.pages
    )
    stylesheet = f'<link rel="stylesheet" href="{SITE_CSS}">'
    head_end = base.lower().find("</head>")
    if head_end >= 0:
        base = base[:head_end] + stylesheet + base[head_end:]
    out: dict[str, str] = {}
    for page in plan.pages:
        nav = (
            f"<nav data-demo-site>{links}</nav><p data-demo-page>Page: {html.escape(page.name)}</p>"
        )
        if head_end < 0:
            nav = stylesheet + nav
        match = _BODY.search(base)
        at = match.end() if match else 0
        out[page.path] = base[:at] + nav + base[at:]
    out[SITE_CSS] = _SHARED_CSS
    return out


def demo_site_script(
    prompt_text: str,
    stack: str,
    variant_index: int,
    tools_offered: Collection[str],
    plan: PagePlan,
    chunk_size: int = 48,
) -> tuple[ScriptedTurn, ...]:
    """Create every page (the entry page first), check the entry page, then summarise."""
    files = site_pages(prompt_text, stack, variant_index, plan)
    pages = {path: content for path, content in files.items() if path != SITE_CSS}
    names = ", ".join(pages)
    call_id = f"demo-{variant_index}"
    creates = [
        call_tool(
            f"{call_id}-create-{i}", "create_file", {"path": path, "content": content}, chunk_size
        )
        for i, (path, content) in enumerate(files.items())
    ]
    turns = [
        ScriptedTurn(
            (
                _think(
                    f"The screenshots show {len(pages)} pages of one site. I'll build one HTML "
                    f"file per page ({names}), each with the same navigation linking the others, "
                    f"styled by one shared {SITE_CSS}."
                ),
                _say("I'll create the entry page first."),
                creates[0],
            )
        ),
        ScriptedTurn((_say("Now the other pages and what they share."), *creates[1:])),
    ]
    if "screenshot_preview" in tools_offered:
        turns.append(
            ScriptedTurn(
                (
                    _say("Let me check how the entry page renders."),
                    call_tool(f"{call_id}-screenshot", "screenshot_preview", {}, chunk_size),
                )
            )
        )
    title = demo_title(prompt_text)
    turns.append(
        ScriptedTurn(
            (
                _say(
                    f"Built \u201c{title}\u201d as a site of {len(pages)} linked pages ({names}); "
                    "each page's navigation opens the others."
                ),
            )
        )
    )
    return tuple(turns)


def responsive_lines(widths: Sequence[int]) -> tuple[str, str]:
    """What the demo says it plans and checks for a page shown at several widths."""
    named = ", ".join(f"{w} px" for w in widths)
    return (
        f"The screenshots show one page at {len(widths)} widths ({named}): one responsive "
        "page adapts to each of them.",
        f"Let me check how it renders at {named}.",
    )


def _think(text: str) -> Think:
    return Think(chunk_text(text, _TEXT_CHUNK))


def _say(text: str) -> Say:
    return Say(chunk_text(text, _TEXT_CHUNK))
