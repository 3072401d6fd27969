"""The tool workers' change check of an update: the previous page and the new one rendered
at each width, and where they differ beyond the selected element (docs/fidelity.md,
"Updates keep what was not asked for"; the comparison itself: services/fidelity/changes.py).

The renders are the fidelity score's (Screenshotter.render_for_score: its places, offline
routing, proxy and limits). The previous page's render is kept: every option of an
update starts from the same page, so it is rendered once per width.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from services.common.project_paths import is_html, path_problem
from services.common.tool_types import FileState
from services.fidelity.changes import (
    ELEMENTS_JS,
    Box,
    Change,
    Render,
    elements_of,
    unrequested_changes,
    words_of,
)
from services.fidelity.dom import EXTRACT_JS
from services.fidelity.stop import Stop, Stopped
from services.tools.fidelity import MAX_WIDTH, MIN_WIDTH, ScoringError, _in_thread
from services.tools.preview_tool import project_html
from services.tools.score_cache import KeptResults
from services.tools.screenshot import Screenshotter

log = logging.getLogger(__name__)

DEFAULT_WIDTH = 1280
MAX_WIDTHS = 4
HEIGHT = 800  # the window; the render is of the whole page (up to the pixel limit)
MAX_KEPT = 32

# Finds the selected element. In the previous page by its HTML as the preview captured it
# (whitespace aside), else by id, else by tag, class and text; in the new page the
# element has changed (that is the request), so first at the same place in the tree
# (`path`, child indices from <body>), then by id, then by tag and class. Returns its box
# in page coordinates and its path, or null.
_FIND_JS = """
(html, path) => {
  const norm = (s) => (s || '').replace(/\\s+/g, ' ').trim();
  const tpl = document.createElement('template');
  tpl.innerHTML = html;
  const want = tpl.content.firstElementChild;
  if (!want) return null;
  const all = [...document.body.querySelectorAll('*')];
  const same = (e) => e.tagName === want.tagName;
  const byId = () => (want.id ? document.getElementById(want.id) : null);
  const byClass = (text) => all.find((e) => same(e) && e.className === want.className &&
    (!text || norm(e.textContent) === norm(want.textContent)));
  const byPath = () => {
    let e = document.body;
    for (const i of path || []) { e = e && e.children[i]; }
    return e && e !== document.body && same(e) ? e : null;
  };
  let el = null;
  if (path) {
    el = byPath() || byId() || byClass(false);
  } else {
    const h = norm(html);
    el = all.find((e) => norm(e.outerHTML) === h) || byId() || byClass(true);
  }
  if (!el) return null;
  const r = el.getBoundingClientRect();
  const at = [];
  for (let e = el; e.parentElement && e !== document.body; e = e.parentElement) {
    at.unshift([...e.parentElement.children].indexOf(e));
  }
  return {x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height, path: at};
}
"""


@dataclass(frozen=True, slots=True)
class WidthChanges:
    width: int
    changes: tuple[Change, ...] = ()
    target: Box | None = None  # both versions' target boxes, united
    unavailable_reason: str = ""


@dataclass(frozen=True, slots=True)
class _Rendered:
    render: Render | None
    path: list[int]
    reason: str = ""


class ChangeChecker:
    def __init__(self, screenshotter: Screenshotter | None) -> None:
        self._screenshotter = screenshotter
        # The previous page's render per (page, width, element): shared by the options.
        self._before: KeptResults[_Rendered] = KeptResults(MAX_KEPT)

    async def compare(
        self,
        before: FileState,
        after: FileState,
        before_files: tuple[FileState, ...],
        after_files: tuple[FileState, ...],
        *,
        widths: tuple[int, ...],
        selected: str,
        timeout_s: float,
        owner: str = "",
    ) -> tuple[WidthChanges, ...]:
        """One answer per width (1280 when none); ScoringError for bad input."""
        if not before.content.strip() or not after.content.strip():
            raise ScoringError(f"{'before' if not before.content.strip() else 'after'}: empty")
        problem = path_problem(after.path) or (None if is_html(after.path) else "not a page")
        if problem is not None:
            raise ScoringError(f"path: {problem}")
        if not selected.strip():
            raise ScoringError("selected_element_html: empty")
        if len(widths) > MAX_WIDTHS:
            raise ScoringError(f"viewport_widths: at most {MAX_WIDTHS}")
        if any(not MIN_WIDTH <= w <= MAX_WIDTH for w in widths):
            raise ScoringError(f"viewport_widths: each must be {MIN_WIDTH}-{MAX_WIDTH}")
        if self._screenshotter is None:
            reason = "screenshots are turned off on the tool worker"
            return tuple(WidthChanges(w, unavailable_reason=reason) for w in widths)
        old_html = await project_html(before, before_files)
        new_html = await project_html(after, after_files)
        stop = Stop(time.monotonic() + timeout_s)
        out = []
        for width in widths or (DEFAULT_WIDTH,):
            try:
                out.append(await self._width(old_html, new_html, width, selected, stop, owner))
            except Stopped:
                reason = f"not compared within its limit of {timeout_s:g} s"
                out.append(WidthChanges(width, unavailable_reason=reason))
        return tuple(out)

    async def _width(
        self, old_html: str, new_html: str, width: int, selected: str, stop: Stop, owner: str
    ) -> WidthChanges:
        digest = hashlib.sha256(old_html.encode()).hexdigest()
        key = (digest, width, hashlib.sha256(selected.encode()).hexdigest())
        old = await self._before.get(
            key,
            lambda: self._render(old_html, width, selected, None, stop, owner),
            lambda r: r.render is not None,
        )
        if old.render is None:
            return WidthChanges(width, unavailable_reason=f"previous page: {old.reason}")
        new = await self._render(new_html, width, selected, old.path, stop, owner)
        if new.render is None:
            return WidthChanges(width, unavailable_reason=f"new page: {new.reason}")
        before, after = old.render, new.render
        changes = await _in_thread(stop, lambda: unrequested_changes(before, after, stop))
        return WidthChanges(width, changes, before.target.union(after.target))

    async def _render(
        self,
        html: str,
        width: int,
        selected: str,
        path: list[int] | None,
        stop: Stop,
        owner: str,
    ) -> _Rendered:
        assert self._screenshotter is not None
        expression = (
            f"() => {{ const out = ({EXTRACT_JS})(); "
            f"out.target = ({_FIND_JS})({json.dumps(selected)}, {json.dumps(path)}); "
            f"out.elements = ({ELEMENTS_JS})(); "
            "return out; }"
        )
        remaining = stop.deadline - time.monotonic()
        if remaining <= 0:
            raise Stopped
        try:
            # A kept page (score_pages.py) for this owner's change checks only: a fresh
            # context per render costs about four times the render's own CPU.
            png, data = await self._screenshotter.render_for_score(
                html,
                width,
                HEIGHT,
                expression,
                timeout_s=remaining,
                owner=owner,
                keep_for=f"{owner}/changes",
            )
        except Exception as exc:  # a failed render is a reason, never a report
            log.info("change check render failed", extra={"reason": str(exc)[:200]})
            first = (str(exc) or type(exc).__name__).splitlines()[0]
            return _Rendered(None, [], f"no render: {first[:300]}")
        target: Any = data.get("target") if isinstance(data, dict) else None
        box = Box.of(target)
        if box is None:
            return _Rendered(None, [], "the selected element is not on the page")
        at = [int(i) for i in target.get("path", [])]
        elements = elements_of(data.get("elements"))
        return _Rendered(Render(png, words_of(data), box, elements), at)
