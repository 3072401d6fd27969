"""How the engine sees the tool service: one protocol, transport hidden."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from services.agent.domain import FileState
from services.agent.events import Accessibility, ChangedWidth, Fidelity
from services.agent.providers.base import MediaPart, ToolCall, ToolSpec
from services.common.credentials import Credentials
from services.common.input_images import InputImage
from services.common.react_project import ProjectBuild


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What every tool call of a variant carries besides its arguments."""

    # The generation's still input images, parsed once (planning.py): a tool call names
    # them by hash, and sends their bytes only to a worker that does not hold them.
    input_images: tuple[InputImage, ...] = ()
    option_codes: tuple[str, ...] = ()
    image_generation_enabled: bool = True
    asset_extraction_enabled: bool = True
    credentials: Credentials = field(default_factory=Credentials)
    asset_base_url: str = ""
    # Seconds left for the generation; the call's deadline is derived from it.
    time_left_s: float | None = None
    # Ask about image tools as if the request had input images (capability queries).
    assume_input_images: bool = False
    # Widths the input screenshots were taken at: screenshot_preview captures each.
    viewport_widths: tuple[int, ...] = ()
    max_project_bytes: int = 0  # all of a variant's files together; 0: the worker's limit
    # The most files a variant's project may hold (the engine refuses a create_file of one
    # more; the workers never see this); 0: no bound.
    max_project_files: int = 0
    # Every file of the variant's project before the call (set by the engine per call).
    files: tuple[FileState, ...] = ()
    owner: str = ""  # the generation: the workers share their browser fairly by it
    build: ProjectBuild = "none"  # react_vite: the writing tools build the project


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    ok: bool
    result: dict[str, Any]
    summary: dict[str, Any]
    updated_file: FileState | None = None
    media: tuple[MediaPart, ...] = ()
    built_file: FileState | None = None  # a built project's page (dist/index.html)


@dataclass(frozen=True, slots=True)
class ToolOffer:
    """The tools to offer the model for a request, and the ones the tool service is set up
    to run but cannot now (by name, with the reason: e.g. a browser that does not launch)."""

    tools: tuple[ToolSpec, ...]
    unavailable: Mapping[str, str] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [tool.name for tool in self.tools]


@dataclass(frozen=True, slots=True)
class FidelityAnswer:
    """A tool worker's score of a page against one input image (ScoreFidelity)."""

    fidelity: Fidelity  # with its regions when asked for them
    comparison_png: bytes = b""
    accessibility: Accessibility | None = None  # asked for with check_accessibility


@runtime_checkable
class FidelityClient(Protocol):
    async def score_fidelity(
        self,
        code: str,
        image: InputImage,
        *,
        image_index: int,
        timeout_s: float,
        with_regions: bool,
        path: str = "",
        files: tuple[FileState, ...] = (),
        viewport_width: int = 0,
        owner: str = "",
        check_accessibility: bool = False,
    ) -> FidelityAnswer:
        """Scores the page `code` (at `path` in a project of `files`) against the input
        `image`, at `viewport_width` (0: the image's own); raises ToolServiceError when no
        worker could be asked."""
        ...


@runtime_checkable
class ChangeClient(Protocol):
    async def compare_renders(
        self,
        before: tuple[FileState, ...],
        after: tuple[FileState, ...],
        *,
        widths: tuple[int, ...],
        selected_element_html: str,
        timeout_s: float,
        owner: str = "",
    ) -> tuple[ChangedWidth, ...]:
        """Where the entry page of project `after` looks different from `before`'s beyond
        the selected element, per width (CompareRenders); raises ToolServiceError when no
        worker could be asked."""
        ...


class ToolExecutor(Protocol):
    async def list_tools(self, context: ToolContext) -> ToolOffer:
        """The tools to offer the model for a request with this context."""
        ...

    async def execute(
        self, call: ToolCall, file: FileState | None, context: ToolContext
    ) -> ToolOutcome:
        """Runs one tool call. Failures of the tool come back as ok=False outcomes;
        an exception means the tool service itself could not be reached."""
        ...
