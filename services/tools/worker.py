"""The transport-neutral core of a tool worker: which tools it can run, and running them."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence

from services.common.accessibility import A11yReport
from services.common.credentials import Credentials
from services.common.errors import FieldViolation
from services.common.images import ImageDecoder
from services.common.project_limits import utf8_size
from services.common.project_paths import ProjectPaths
from services.common.react_project import BUILT_PATH, ProjectBuild
from services.common.tool_types import CapturedImage, FileState, ToolCall
from services.common.vendor import load_or_none
from services.fidelity.accessibility import AxeScript
from services.tools.accessibility_tool import NAME as CHECK_A11Y
from services.tools.accessibility_tool import accessibility_handler
from services.tools.asset_store import AssetStore
from services.tools.browser_health import BrowserHealth
from services.tools.capture import CaptureRequest, UrlCapturer
from services.tools.changes import ChangeChecker
from services.tools.compare_tool import NAME as COMPARE
from services.tools.compare_tool import compare_handler
from services.tools.definitions import ToolDefinition
from services.tools.egress_routes import ENV_NAME, EgressTestRoutes
from services.tools.extract_assets import extract_assets_handler
from services.tools.fidelity import FidelityOutcome, FidelityScorer
from services.tools.file_tools import file_tool_handlers
from services.tools.image_store import ImageRef, ImageStore
from services.tools.image_tools import image_tool_handlers
from services.tools.metrics import ToolsMetrics
from services.tools.preview_tool import screenshot_preview_handler
from services.tools.react_build import ReactBuilder
from services.tools.runtime import ToolRuntime
from services.tools.save_assets import asset_tool_handlers, stage_uploads
from services.tools.screenshot import ScreenshotSettings, Screenshotter
from services.tools.settings import ToolsSettings
from services.tools.types import ToolContext, ToolFlags, ToolHandler, ToolOutcome

log = logging.getLogger(__name__)

_ALWAYS = frozenset({"create_file", "edit_file", "retrieve_option", "save_assets"})
# The tools that read the request's input images: only their calls resolve the images
# the call names (and make the agent send any this worker does not hold).
_READ_IMAGES = frozenset({"save_assets", "extract_assets", COMPARE})
_REPLICATE = frozenset({"generate_images", "remove_background", "edit_image"})


class ToolWorker:
    def __init__(self, settings: ToolsSettings, metrics: ToolsMetrics | None = None) -> None:
        self.settings = settings
        self.metrics = metrics or ToolsMetrics()
        self.store = AssetStore(settings.data_dir)
        # The process's one image budget: everything here that decodes goes through it.
        self.images = ImageDecoder(settings.images)
        self.builder = ReactBuilder(settings.react_build)
        # The generations' input images by hash, sent once per worker (image_store.py).
        self.inputs = ImageStore(settings.image_cache_bytes)
        handlers: dict[str, ToolHandler] = {
            **file_tool_handlers(max_file_bytes=settings.max_file_bytes, builder=self.builder),
            **image_tool_handlers(self.store),
            **asset_tool_handlers(self.store),
            "extract_assets": extract_assets_handler(self.store, self.images),
        }
        vendor = load_or_none(settings.vendor_dir)
        self.screenshotter: Screenshotter | None = None
        self.browser: BrowserHealth | None = None
        if settings.screenshots_enabled:
            self.browser = BrowserHealth(settings.chromium_path, self.metrics)
            routes = EgressTestRoutes(settings.test_egress_routes)
            if routes.routes:
                log.warning(
                    f"{ENV_NAME} is set: test names reach loopback",
                    extra={"names": list(routes.routes)},
                )
            self.screenshotter = Screenshotter(
                ScreenshotSettings(
                    chromium_path=settings.chromium_path,
                    max_width_px=settings.capture.max_width_px,
                    max_height_px=settings.capture.max_height_px,
                    max_total_captures=settings.preview_max_captures,
                    max_score_renders=settings.fidelity_max_renders,
                ),
                resolver=routes.resolver if routes.routes else None,
                upstream_opener=routes.opener if routes.routes else None,
                on_launch=self.browser.launched,
                vendor=vendor,
            )
            handlers["screenshot_preview"] = screenshot_preview_handler(self.screenshotter)
        self.capturer = UrlCapturer(self.screenshotter, settings.capture)
        self.axe = AxeScript(vendor)
        self.fidelity = FidelityScorer(
            self.screenshotter, self.images, max_blocks=settings.fidelity_max_blocks, axe=self.axe
        )
        self.changes = ChangeChecker(self.screenshotter)
        if self.screenshotter is not None:
            handlers["compare_with_reference"] = compare_handler(
                self.fidelity, settings.tool_timeouts_s.get(COMPARE, 60.0)
            )
            if not self.axe.unavailable:
                handlers[CHECK_A11Y] = accessibility_handler(
                    self.screenshotter, self.axe, settings.tool_timeouts_s.get(CHECK_A11Y, 60.0)
                )
        self.runtime = ToolRuntime(
            handlers,
            timeouts_s=settings.tool_timeouts_s,
            default_timeout_s=settings.default_tool_timeout_s,
        )

    def accessibility_of(self, outcome: FidelityOutcome) -> A11yReport:
        """A score's accessibility check, or why there is none (the score's own reason
        when its page never rendered)."""
        if outcome.accessibility is not None:
            return outcome.accessibility
        reason = self.axe.unavailable or outcome.unavailable_reason or "not checked"
        return A11yReport(outcome.viewport_width, unavailable_reason=reason)

    def build_violations(
        self, build: ProjectBuild, files: Mapping[str, str]
    ) -> list[FieldViolation]:
        """What keeps a BuildProject request from being built (empty: nothing)."""
        if build == "none":
            return [FieldViolation("build", "required: the kind of project to build")]
        if not files:
            return [FieldViolation("files", "required: the project's files")]
        paths = ProjectPaths((), build)
        out = []
        for i, (path, content) in enumerate(files.items()):
            problem = paths.problem(path) if path != BUILT_PATH else None
            if problem is not None:
                out.append(FieldViolation(f"files[{i}].path", f"not a project path: {problem}"))
            elif utf8_size(content) > self.settings.max_file_bytes:
                limit = self.settings.max_file_bytes
                out.append(FieldViolation(f"files[{i}].content", f"more than {limit} bytes"))
            paths.add(path)
        return out

    async def close(self) -> None:
        await self.builder.close()
        if self.screenshotter is not None:
            await self.screenshotter.close()

    async def capture_url(
        self, request: CaptureRequest, *, timeout_s: float | None = None
    ) -> CapturedImage:
        """A full-page image of a public URL; CaptureError says why not."""
        return await self.capturer.capture(request, timeout_s=timeout_s)

    async def available(self, credentials: Credentials) -> set[str]:
        """Tool names this worker can really run for a request with these credentials."""
        creds = self.settings.credential_policy.resolve(credentials)
        names = set(_ALWAYS)
        if creds.key("replicate"):
            names |= _REPLICATE
        if creds.key("gemini"):
            names.add("extract_assets")
        if self.screenshotter is not None and await self.screenshotter.probe():
            names.add("screenshot_preview")
            if not self.fidelity.available():
                names.add(COMPARE)
            if CHECK_A11Y in self.runtime.tool_names:
                names.add(CHECK_A11Y)
        return names

    async def definitions(self, flags: ToolFlags, credentials: Credentials) -> list[ToolDefinition]:
        return self.runtime.definitions(flags, await self.available(credentials))

    def unavailable(self) -> dict[str, str]:
        """Tools this worker is set up to run but cannot now, each with the reason (not the
        ones turned off or lacking a key: those are as configured)."""
        return self.browser.unavailable() if self.browser is not None else {}

    async def execute(
        self,
        call: ToolCall,
        file: FileState | None,
        ctx: ToolContext,
        images: Sequence[ImageRef] = (),
    ) -> ToolOutcome:
        """Runs one call. `images` are the request's input images as the call names them:
        kept when their bytes came along, resolved only for a tool that reads them
        (ImagesNotHeld when this worker does not hold some; BadImageRef for bad ones)."""
        if call.name in _READ_IMAGES:
            ctx = dataclasses.replace(ctx, input_images=self.inputs.resolve(images))
        else:
            self.inputs.keep(images)
        merged = dataclasses.replace(
            ctx, credentials=self.settings.credential_policy.resolve(ctx.credentials)
        )
        started = time.monotonic()
        if call.name == "save_assets":
            # Uploads are staged on demand from the request's own images: their ids are
            # content hashes, so no worker needs to have seen the upload before.
            await stage_uploads(self.store, ctx.input_images, ctx.asset_base_url)
        outcome = await self.runtime.execute(call, file, merged)
        # Labels come from a fixed vocabulary: a made-up name must not mint a series.
        label = call.name if call.name in self.runtime.tool_names else "unknown"
        self.metrics.tool_seconds.labels(label, str(outcome.ok).lower()).observe(
            time.monotonic() - started
        )
        return outcome
