"""The tool service's settings: read once from the environment, then passed down."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from services.common import settings_env
from services.common.credentials import (
    TOOL_IDS,
    CredentialPolicy,
    Credentials,
    request_base_urls_allowed,
)
from services.common.images import ImageLimits
from services.common.project_limits import MAX_FILE_BYTES
from services.common.security import GrpcSecurity
from services.common.vendor import DEFAULT_VENDOR_DIR, vendor_dir_from_env
from services.fidelity.score import MAX_BLOCKS
from services.tools.capture import CaptureSettings
from services.tools.egress_routes import ENV_NAME as TEST_EGRESS_ROUTES_ENV
from services.tools.egress_routes import parse_routes
from services.tools.react_build import BuildSettings

# Wall-clock limit of a whole tool execution, on top of each Replicate or Gemini request's
# own limit: a call may queue many predictions. A screenshot is two captures of at most
# 30 s each; the file tools work in memory, so needing longer means something is wrong.
DEFAULT_TOOL_TIMEOUT_S = 120.0
DEFAULT_TOOL_TIMEOUTS_S: Mapping[str, float] = MappingProxyType(
    {
        "generate_images": 120.0,
        "remove_background": 120.0,
        "edit_image": 120.0,
        "extract_assets": 120.0,
        "screenshot_preview": 60.0,
        "compare_with_reference": 60.0,  # a render and OCR of the screenshot
        "check_accessibility": 60.0,  # a render and axe-core's run
        "save_assets": 60.0,  # local copies only, but of up to 20 MiB each
        # A react_vite project's build after each change stops sooner (react_build.py).
        "create_file": 10.0,
        "edit_file": 10.0,
        "retrieve_option": 10.0,
    }
)
DEFAULT_MAX_FILE_BYTES = MAX_FILE_BYTES  # a text-mode page is held to the same
# Agents balance over the workers a DNS name resolves to, but only resolve it again when a
# connection goes away: closing each one after a minute lets workers added since get calls.
DEFAULT_MAX_CONNECTION_AGE_S = 60.0
DEFAULT_IMAGE_CACHE_BYTES = 256 << 20
# How much longer than the longest call a closing connection is kept, so none is cut.
CONNECTION_GRACE_MARGIN_S = 10.0


@dataclass(frozen=True, slots=True)
class ToolsSettings:
    listen: str = "127.0.0.1:50052"
    data_dir: Path = Path(".s2c-data")
    chromium_path: str = "/usr/bin/chromium"
    screenshots_enabled: bool = True
    # Only the image-tool keys matter here; model keys never reach the workers' env.
    credentials: Credentials = field(default_factory=Credentials)
    # Whether requests may name their own *_base_url (always with their own key).
    allow_request_base_urls: bool = True
    shutdown_grace_s: float = 30.0
    grpc_security: GrpcSecurity = field(default_factory=GrpcSecurity)
    metrics_listen: str = ""  # host:port of the /metrics endpoint; empty: off
    # Tools not named here get default_tool_timeout_s.
    tool_timeouts_s: Mapping[str, float] = field(default_factory=lambda: DEFAULT_TOOL_TIMEOUTS_S)
    default_tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S
    # UTF-8 size of the app's file, for create_file and for the result of edit_file.
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    # `CaptureUrl`: its deadline, maximum page width and height (previews' too) and
    # maximum image size.
    capture: CaptureSettings = field(default_factory=CaptureSettings)
    # The pixels one image may decode to (S2C_IMAGE_MAX_PIXELS; common/images.py).
    images: ImageLimits = field(default_factory=ImageLimits)
    # The vendored CDN copies screenshots and URL captures render with (S2C_VENDOR_DIR).
    vendor_dir: Path = DEFAULT_VENDOR_DIR
    # Tests only (see egress_routes.py): `.test` names the browser may reach on loopback.
    test_egress_routes: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    # Each client connection is closed after about this long (0: never); see the grace.
    max_connection_age_s: float = DEFAULT_MAX_CONNECTION_AGE_S
    # The most text blocks of each page a fidelity score matches (S2C_FIDELITY_MAX_BLOCKS).
    fidelity_max_blocks: int = MAX_BLOCKS
    # The browser's places (screenshot.py, slots.py): previews of all owners at once
    # (S2C_PREVIEW_MAX_CAPTURES), and fidelity score renders, in places of their own
    # (S2C_FIDELITY_MAX_RENDERS).
    preview_max_captures: int = 4
    fidelity_max_renders: int = 2
    # How a react_vite project is built (docs/react.md): S2C_NODE, S2C_REACT_BUILD_TIMEOUT_S,
    # S2C_REACT_BUILD_HEAP_MB, S2C_REACT_BUILD_PROCESSES; the packages from vendor_dir.
    react_build: BuildSettings = field(default_factory=BuildSettings)
    # The input images the worker keeps for the generations it serves, by hash
    # (image_store.py; S2C_TOOLS_IMAGE_CACHE_MB), and the fidelity scorer's OCR of them.
    image_cache_bytes: int = DEFAULT_IMAGE_CACHE_BYTES

    @property
    def max_connection_age_grace_s(self) -> float:
        """How long the calls on a connection past its age may still run: longer than any
        call can take (every tool's time limit and the URL capture deadline), so closing a
        connection never cuts one."""
        longest = max(
            [*self.tool_timeouts_s.values(), self.default_tool_timeout_s, self.capture.timeout_s]
        )
        return longest + CONNECTION_GRACE_MARGIN_S

    @property
    def credential_policy(self) -> CredentialPolicy:
        return CredentialPolicy(self.credentials, self.allow_request_base_urls)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ToolsSettings:
        env = settings_env.environ(env)
        return cls(
            **settings_env.service_fields(env),
            chromium_path=env.get("S2C_CHROMIUM_PATH", "/usr/bin/chromium"),
            screenshots_enabled=env.get("S2C_SCREENSHOTS", "1") not in ("0", "false", "no"),
            allow_request_base_urls=request_base_urls_allowed(env),
            credentials=Credentials.from_env(env, TOOL_IDS),
            capture=_capture_settings(env),
            images=ImageLimits.from_env(env),
            test_egress_routes=parse_routes(env.get(TEST_EGRESS_ROUTES_ENV, "")),
            max_connection_age_s=settings_env.bound(
                env, "S2C_TOOLS_MAX_CONNECTION_AGE_S", str(DEFAULT_MAX_CONNECTION_AGE_S), float
            ),
            vendor_dir=vendor_dir_from_env(env),
            fidelity_max_blocks=int(
                settings_env.positive(env, "S2C_FIDELITY_MAX_BLOCKS", MAX_BLOCKS)
            ),
            preview_max_captures=int(settings_env.positive(env, "S2C_PREVIEW_MAX_CAPTURES", 4)),
            fidelity_max_renders=int(settings_env.positive(env, "S2C_FIDELITY_MAX_RENDERS", 2)),
            react_build=_build_settings(env),
            image_cache_bytes=settings_env.bound(
                env, "S2C_TOOLS_IMAGE_CACHE_MB", str(DEFAULT_IMAGE_CACHE_BYTES >> 20), int
            )
            << 20,
        )


def _build_settings(env: Mapping[str, str]) -> BuildSettings:
    default = BuildSettings()
    return BuildSettings(
        node=env.get("S2C_NODE", default.node),
        node_modules=vendor_dir_from_env(env) / "node_modules",
        timeout_s=settings_env.positive(env, "S2C_REACT_BUILD_TIMEOUT_S", default.timeout_s),
        max_heap_mb=int(settings_env.positive(env, "S2C_REACT_BUILD_HEAP_MB", default.max_heap_mb)),
        processes=int(settings_env.positive(env, "S2C_REACT_BUILD_PROCESSES", default.processes)),
    )


def _capture_settings(env: Mapping[str, str]) -> CaptureSettings:
    default = CaptureSettings()
    return CaptureSettings(
        timeout_s=settings_env.positive(env, "S2C_CAPTURE_TIMEOUT_S", default.timeout_s),
        max_height_px=int(
            settings_env.positive(env, "S2C_CAPTURE_MAX_HEIGHT_PX", default.max_height_px)
        ),
        max_width_px=int(
            settings_env.positive(env, "S2C_CAPTURE_MAX_WIDTH_PX", default.max_width_px)
        ),
        max_bytes=int(settings_env.positive(env, "S2C_CAPTURE_MAX_BYTES", default.max_bytes)),
        concurrency=int(settings_env.positive(env, "S2C_CAPTURE_CONCURRENCY", default.concurrency)),
    )
