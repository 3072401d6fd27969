"""What a create's tagged images ask for: one page at several widths, or several pages.

A tag (`ImageMeta`) says at which viewport width an image was taken and which page it
shows. Images of one page (or of no page) at several widths ask for one responsive page;
images of several pages ask for one linked HTML file per page. The entry page is
`index.html`: the page named `index`, else the first page named; every other page is
`<page>.html`. Untagged images keep their old meaning: screenshots of the entry page.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from services.agent.domain import FileState, ImageMeta
from services.common import project_paths
from services.common.errors import FieldViolation
from services.common.page_tags import page_problem, too_many_tags, width_problem
from services.common.project_limits import (
    BYTES_ENV,
    MAX_FILE_BYTES,
    project_bytes,
    too_many_bytes,
    too_many_files,
    utf8_size,
)
from services.common.project_paths import ProjectPaths, fold
from services.common.react_project import BUILT_PATH, ProjectBuild

ENTRY_PATH = project_paths.ENTRY_PATH
ENTRY_PAGE = "index"


@dataclass(frozen=True, slots=True)
class Page:
    """One page to build: its file and the images (0-based indexes) that show it."""

    name: str
    path: str
    images: tuple[int, ...]
    widths: tuple[int, ...]  # the widths its images were taken at, in image order


@dataclass(frozen=True, slots=True)
class PagePlan:
    pages: tuple[Page, ...]

    @property
    def widths(self) -> tuple[int, ...]:
        """Every width any image was taken at, first seen first, without repeats."""
        return tuple(dict.fromkeys(w for page in self.pages for w in page.widths))

    @property
    def multi_page(self) -> bool:
        return len(self.pages) > 1


def page_plan(image_count: int, metas: Sequence[ImageMeta]) -> PagePlan:
    """The pages `image_count` images tagged by `metas` (aligned, maybe shorter) ask for."""
    tags = [*metas[:image_count], *[ImageMeta()] * max(0, image_count - len(metas))]
    named = list(dict.fromkeys(tag.page for tag in tags if tag.page))
    entry = ENTRY_PAGE if ENTRY_PAGE in named else (named[0] if named else ENTRY_PAGE)
    order = [entry, *(name for name in named if name != entry)]
    pages = []
    for name in order:
        indexes = tuple(i for i, tag in enumerate(tags) if (tag.page or entry) == name)
        widths = tuple(
            dict.fromkeys(w for i in indexes if (w := tags[i].viewport_width) is not None)
        )
        path = ENTRY_PATH if name == entry else f"{name}.html"
        pages.append(Page(name, path, indexes, widths))
    return PagePlan(tuple(pages))


def meta_violations(
    image_count: int, metas: Sequence[ImageMeta], max_pages: int, field: str = "prompt.image_meta"
) -> list[FieldViolation]:
    """What is wrong with a create's tags, each naming its field."""
    out: list[FieldViolation] = []
    problem = too_many_tags(len(metas), image_count)
    if problem is not None:
        out.append(FieldViolation(field, problem))
    page_twins: dict[str, str] = {}  # by folded name: `<page>.html` twins are one file
    for i, meta in enumerate(metas):
        width = meta.viewport_width
        if width is not None and (problem := width_problem(width)) is not None:
            out.append(FieldViolation(f"{field}[{i}].viewport_width", problem))
        if meta.page and (problem := page_problem(meta.page)) is not None:
            out.append(FieldViolation(f"{field}[{i}].page", problem))
        elif meta.page and (twin := page_twins.setdefault(fold(meta.page), meta.page)) != meta.page:
            out.append(FieldViolation(f"{field}[{i}].page", f"differs from {twin} only in case"))
    pages = {meta.page for meta in metas if meta.page}
    if max_pages and len(pages) > max_pages:
        out.append(FieldViolation(field, f"at most {max_pages} pages, got {len(pages)}"))
    return out


# The captures of a preview when no image gives a width: desktop and mobile.
DEFAULT_PREVIEW_WIDTHS = 2


def render_violations(
    plan: PagePlan, options: int, max_renders: int, field: str = "prompt.image_meta"
) -> list[FieldViolation]:
    """A request whose options would each capture every page at every width taking more
    than `max_renders` renders (0: no bound): twenty tagged widths made one preview forty
    pages at once and the machine ran out of memory (issue 35)."""
    widths = len(plan.widths) or DEFAULT_PREVIEW_WIDTHS
    renders = widths * max(1, len(plan.pages)) * options
    if not max_renders or renders <= max_renders:
        return []
    pages = max(1, len(plan.pages))
    shown = f"{_count(widths, 'width')} × {_count(pages, 'page')} × {_count(options, 'option')}"
    return [
        FieldViolation(
            field,
            f"{shown} is {renders} renders per round of previews; at most {max_renders} "
            "(S2C_MAX_RENDERS): tag fewer widths or pages, or ask for fewer options",
        )
    ]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def entry_file(files: Sequence[FileState]) -> FileState | None:
    """The project's entry page: its build's page when it has one (`dist/index.html`,
    docs/react.md), else `index.html`, else its first HTML file, else its first."""
    for file in files:
        if file.path == BUILT_PATH:
            return file
    for file in files:
        if file.path == ENTRY_PATH:
            return file
    for file in files:
        if file.path.lower().endswith((".html", ".htm")):
            return file
    return files[0] if files else None


def project_violations(
    files: Sequence[FileState],
    max_bytes: int,
    max_files: int = 0,
    field: str = "files",
    build: ProjectBuild = "none",
) -> list[FieldViolation]:
    """What is wrong with an update's project: too many files (then nothing else is
    looked at), bad, repeated or case-twin paths, or too many bytes. 0: no such bound.
    A built project's paths follow its build's rule; its last page is one of its files."""
    if max_files and len(files) > max_files:
        # The request's files are read only up to one past the bound (convert.py).
        return [FieldViolation(field, too_many_files(f"more than {max_files}", max_files))]
    out: list[FieldViolation] = []
    seen = ProjectPaths((), build)
    for i, file in enumerate(files):
        built = build != "none" and file.path == BUILT_PATH
        problem = None if built else seen.problem(file.path)
        if problem is not None:
            out.append(FieldViolation(f"{field}[{i}].path", f"not a project path: {problem}"))
        elif file.path in seen:
            out.append(FieldViolation(f"{field}[{i}].path", f"{file.path} is given twice"))
        seen.add(file.path)
    size = project_bytes(files)
    if max_bytes > 0 and size > max_bytes:
        out.append(FieldViolation(field, too_many_bytes(size, max_bytes)))
    return out


def page_room(files: Iterable[FileState], path: str, max_project_bytes: int) -> tuple[int, str]:
    """The most UTF-8 bytes a page written to `path` of the project `files` may hold, and
    the limit saying so: one file's, or what the other files leave of the project's."""
    room, rule = MAX_FILE_BYTES, "the most one file may hold"
    if max_project_bytes > 0:
        others = project_bytes(f for f in files if f.path != path)
        left = max_project_bytes - others - utf8_size(path)
        if left < room:
            room = max(0, left)
            rule = f"what the project's other files leave of {max_project_bytes} ({BYTES_ENV})"
    return room, rule
