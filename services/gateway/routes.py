"""The HTTP routes the upstream frontend calls besides the WebSocket.

Design systems CRUD, export and screenshot (a URL captured by a tool worker's browser,
asked of the agent: the gateway knows no tool). Errors use the shape upstream's FastAPI backend
answers with, `{"detail": "…"}`, which is what the frontend shows.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from functools import wraps
from typing import Any
from urllib.parse import urlsplit

import grpc
from aiohttp import hdrs, web
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.common.errors import bad_request_violations
from services.common.project_limits import too_many_files
from services.common.project_paths import ProjectPaths
from services.common.react_project import BUILT_PATH, ProjectBuild, build_of, pinned_versions
from services.common.storage import StorageHealth
from services.common.tracing import outgoing_metadata
from services.gateway.bodies import TooManyValues, parse_json, read_capped
from services.gateway.design_systems import (
    STORE_NAME,
    Clock,
    DesignSystemError,
    DesignSystemStore,
    StorageUnavailable,
    parse_create,
    parse_patch,
)
from services.gateway.export import ExportBusy, ExportPolicy, build_export
from services.gateway.export_markup import ExportTooComplex
from services.gateway.export_react import react_project_zip
from services.gateway.keys import CAPTURES_KEY, CHANNEL_KEY, METRICS_KEY
from services.gateway.limits import CaptureLimiter, client_identity
from services.gateway.settings import GatewaySettings
from services.gateway.vendor_files import catalog_of

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

DESIGN_SYSTEMS_KEY = web.AppKey("design_systems", DesignSystemStore)

# Screenshot bodies (design systems derive theirs from their own limits).
MAX_SMALL_BODY_BYTES = 2 * 1024 * 1024
# A screenshot request is a URL and a key.
MAX_SCREENSHOT_BODY_BYTES = 64 * 1024
# Export transforms running at once: they share one GIL with the event loop, so more
# would only slow every other request down without finishing any sooner.
EXPORT_CPU_SLOTS = 2

# A backstop only: the tool worker bounds each capture by its own deadline
# (S2C_CAPTURE_TIMEOUT_S, default 30 s) and answers when it passes.
CAPTURE_RPC_TIMEOUT_S = 150.0
# The agent's (the worker's) status → the HTTP status the browser gets.
_CAPTURE_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.PERMISSION_DENIED: 422,  # a loopback, private or unresolvable target
    grpc.StatusCode.RESOURCE_EXHAUSTED: 422,  # the image is over the size limit
    grpc.StatusCode.FAILED_PRECONDITION: 502,  # the page itself did not load
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.UNAVAILABLE: 503,  # no worker with a browser, or no agent
}
# `device` and `format` are our extensions of upstream's body; absent means the default.
_DEVICES = {
    None: pb.CAPTURE_DEVICE_UNSPECIFIED,
    "desktop": pb.CAPTURE_DEVICE_DESKTOP,
    "mobile": pb.CAPTURE_DEVICE_MOBILE,
}
_FORMATS = {
    None: pb.CAPTURE_FORMAT_UNSPECIFIED,
    "png": pb.CAPTURE_FORMAT_PNG,
    "jpeg": pb.CAPTURE_FORMAT_JPEG,
}

_EXPLICIT_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEME_PREFIX = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(.*)", re.DOTALL)
_PORT_START = re.compile(r"\d+(?:[/?#]|$)")


class ApiError(Exception):
    def __init__(self, status: int, detail: str, retry_after_s: int | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.retry_after_s = retry_after_s


def normalize_screenshot_url(url: str) -> str:
    """The URL to capture, as upstream normalises it: https:// is added when none is given.

    `host:port` and `user:pass@host` look like a scheme to a URL parser but are hosts, so
    they get https:// too; any other scheme (ftp, file, javascript, …) is refused.
    """
    url = url.strip()
    if not url:
        raise ApiError(400, "URL is required")
    explicit = _EXPLICIT_SCHEME.match(url)
    if explicit is not None:
        scheme = explicit.group(1).lower()
        if scheme not in ("http", "https"):
            raise ApiError(400, f"Unsupported protocol: {scheme}")
        return url
    prefixed = _SCHEME_PREFIX.fullmatch(url)
    if prefixed is not None:
        rest = prefixed.group(2)
        is_host = _PORT_START.match(rest) is not None or "@" in rest.split("/", 1)[0]
        if not is_host:
            raise ApiError(400, f"Unsupported protocol: {prefixed.group(1).lower()}")
    return f"https://{url}"


def _api(handler: Handler) -> Handler:
    @wraps(handler)
    async def wrapped(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as exc:
            headers = {} if exc.retry_after_s is None else {"Retry-After": str(exc.retry_after_s)}
            return web.json_response({"detail": exc.detail}, status=exc.status, headers=headers)
        except DesignSystemError as exc:
            # Storage failures are logged once, by the store's health, when they begin.
            if exc.status >= 500 and not isinstance(exc, StorageUnavailable):
                log.error("design systems store failed", extra={"detail": exc.detail})
            return web.json_response({"detail": exc.detail}, status=exc.status)

    return wrapped


def max_request_body_bytes(settings: GatewaySettings) -> int:
    """The largest body any route reads: aiohttp's app-wide cap, a backstop only."""
    return max(
        settings.export.max_body_bytes,
        MAX_SMALL_BODY_BYTES,
        MAX_SCREENSHOT_BODY_BYTES,
        settings.design_systems.max_body_bytes,
    )


async def _json_body(request: web.Request, max_bytes: int) -> object:
    """The body as JSON, refused with 413 once it is known to exceed `max_bytes`: at once
    from Content-Length, else as soon as that much has arrived (never buffered whole)."""
    raw = await read_capped(request.content, request.content_length, max_bytes)
    if raw is None:
        raise ApiError(413, f"Request body is too large (max {max_bytes} bytes)")
    try:
        return await parse_json(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"Request body is not valid JSON: {exc}") from exc
    except TooManyValues as exc:
        raise ApiError(413, f"Request body is too large: {exc}") from None
    except (RecursionError, ValueError):
        # Nesting deeper than the parser's recursion allows, or an integer too long to
        # convert: JSON, but not one any route takes.
        raise ApiError(
            400, "Request body is nested too deeply or has a number too long to read"
        ) from None


def _json_object(body: object) -> Mapping[str, Any]:
    if not isinstance(body, dict):
        raise ApiError(400, "Request body must be a JSON object")
    return body


def _own_hosts(request: web.Request) -> set[str]:
    """The host names the browser reaches us by (through proxies and tunnels too)."""
    hosts: set[str] = set()
    for header in (hdrs.X_FORWARDED_HOST, hdrs.HOST):
        for item in request.headers.get(header, "").split(","):
            try:
                name = urlsplit(f"//{item.strip()}").hostname
            except ValueError:
                continue
            if name:
                hosts.add(name)
    return hosts


def _base_url(value: object) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            parts = urlsplit(value.strip())
            if parts.scheme.lower() in ("http", "https") and parts.hostname:
                return value.strip()
        except ValueError:
            pass
    raise ApiError(400, "baseUrl must be an absolute http(s) URL")


class _Routes:
    def __init__(
        self,
        settings: GatewaySettings,
        store: DesignSystemStore,
        policy: ExportPolicy,
        captures: CaptureLimiter,
    ) -> None:
        self._settings = settings
        self._store = store
        self._policy = policy
        self._export_slots = asyncio.Semaphore(EXPORT_CPU_SLOTS)
        self._captures = captures

    async def list_design_systems(self, request: web.Request) -> web.StreamResponse:
        return web.json_response([s.to_json() for s in await self._store.list_all()])

    async def create_design_system(self, request: web.Request) -> web.StreamResponse:
        limits = self._store.limits
        name, content = parse_create(await _json_body(request, limits.max_body_bytes), limits)
        return web.json_response((await self._store.create(name, content)).to_json())

    async def update_design_system(self, request: web.Request) -> web.StreamResponse:
        limits = self._store.limits
        patch = parse_patch(await _json_body(request, limits.max_body_bytes), limits)
        updated = await self._store.update(request.match_info["system_id"], patch)
        return web.json_response(updated.to_json())

    async def delete_design_system(self, request: web.Request) -> web.StreamResponse:
        await self._store.delete(request.match_info["system_id"])
        return web.Response(status=204)

    async def export(self, request: web.Request) -> web.StreamResponse:
        fields = _json_object(await _json_body(request, self._policy.max_body_bytes))
        stack = fields.get("stack", "")
        if stack not in ("", "react_vite"):
            raise ApiError(400, 'stack must be "react_vite" or left out')
        build = build_of(str(stack))
        code = _export_code(fields, self._settings.max_project_files, build)
        if build != "none":
            if not isinstance(code, dict):
                raise ApiError(400, "A react_vite export takes the project's files")
            try:
                versions = await asyncio.to_thread(pinned_versions, self._settings.vendor_dir)
            except (OSError, ValueError, KeyError):
                raise ApiError(503, "The vendored npm packages are not installed") from None
            return _zip_response(await asyncio.to_thread(react_project_zip, code, versions))
        offline = fields.get("offline", False)
        if not isinstance(offline, bool):
            raise ApiError(400, "offline must be true or false")
        runtimes = catalog_of(request.app) if offline else None
        if offline and runtimes is None:
            raise ApiError(
                503, "An offline export needs the vendored CDN copies, which are not installed"
            )
        budget = self._policy.transform_timeout_s
        try:
            archive = await build_export(
                code,
                _base_url(fields.get("baseUrl")),
                assets_dir=self._settings.data_dir / "assets",
                own_hosts=_own_hosts(request),
                policy=self._policy,
                cpu_slots=self._export_slots,
                runtimes=runtimes,
            )
        except ExportTooComplex:
            raise ApiError(
                422, f"The page could not be processed within {budget:g} s; export a smaller page"
            ) from None
        except ExportBusy:
            raise ApiError(
                503, f"The server is busy with other exports (waited {budget:g} s); try again"
            ) from None
        return _zip_response(archive)

    async def screenshot(self, request: web.Request) -> web.StreamResponse:
        fields = _json_object(await _json_body(request, MAX_SCREENSHOT_BODY_BYTES))
        url = fields.get("url")
        if not isinstance(url, str):
            raise ApiError(400, "url must be a string")
        api_key = fields.get("apiKey")
        if api_key is not None and not isinstance(api_key, str):
            raise ApiError(400, "apiKey must be a string")
        # apiKey is upstream's ScreenshotOne key: we capture with our own browser, so it is
        # checked for shape only and goes nowhere.
        device, fmt = fields.get("device"), fields.get("format")
        # A list or an object is unhashable: the type check comes first.
        if not isinstance(device, str | None) or device not in _DEVICES:
            raise ApiError(400, 'device must be "desktop" or "mobile"')
        if not isinstance(fmt, str | None) or fmt not in _FORMATS:
            raise ApiError(400, 'format must be "png" or "jpeg"')
        capture = pb.CaptureUrlRequest(
            url=normalize_screenshot_url(url), device=_DEVICES[device], format=_FORMATS[fmt]
        )
        channel = request.app.get(CHANNEL_KEY)
        if channel is None:
            raise ApiError(503, "URL capture is unavailable: no agent is configured")
        client = client_identity(request, self._settings.access)
        refusal = self._captures.try_start(client)
        if refusal is not None:
            raise ApiError(refusal.status, refusal.message, refusal.retry_after_s)
        try:
            answer = await pb_grpc.AgentServiceStub(channel).CaptureUrl(
                capture, timeout=CAPTURE_RPC_TIMEOUT_S, metadata=outgoing_metadata()
            )
        except grpc.aio.AioRpcError as exc:
            raise capture_error(exc) from None
        finally:
            self._captures.finish(client)
        data_url = f"data:{answer.mime_type};base64," + base64.b64encode(answer.image).decode()
        # `url` is what upstream's UI reads; the rest describes the capture for other clients.
        return web.json_response(
            {
                "url": data_url,
                "mimeType": answer.mime_type,
                "width": answer.width,
                "height": answer.height,
                "truncated": answer.truncated,
                "finalUrl": answer.final_url,
            }
        )


def capture_error(exc: grpc.aio.AioRpcError) -> ApiError:
    code = exc.code()
    status = _CAPTURE_STATUS.get(code, 502)
    violations = bad_request_violations(exc) if code == grpc.StatusCode.INVALID_ARGUMENT else []
    detail = "; ".join(v.description for v in violations) or exc.details() or code.name
    if code == grpc.StatusCode.UNAVAILABLE and not detail.startswith("URL capture"):
        detail = "URL capture is unavailable: the agent cannot be reached"
    elif code not in _CAPTURE_STATUS:
        # Only the verdicts above are worded for users; anything else (UNKNOWN: a handler
        # raised) would carry an exception's text.
        detail = f"URL capture failed ({code.name}); the server's log has the cause"
    log.warning("url capture failed", extra={"code": code.name, "status": status})
    return ApiError(status, detail)


def add_routes(
    app: web.Application,
    settings: GatewaySettings,
    *,
    export_policy: ExportPolicy | None = None,
    clock: Clock | None = None,
) -> None:
    """Registers design systems CRUD, `/api/export` and `/api/screenshot` on `app`."""
    metrics = app.get(METRICS_KEY)
    health = StorageHealth(STORE_NAME, None if metrics is None else metrics.storage)
    limits = settings.design_systems
    store = (
        DesignSystemStore(settings.data_dir, limits=limits, health=health)
        if clock is None
        else DesignSystemStore(settings.data_dir, clock=clock, limits=limits, health=health)
    )
    app[DESIGN_SYSTEMS_KEY] = store
    captures = app[CAPTURES_KEY] = CaptureLimiter(settings.access)
    routes = _Routes(settings, store, export_policy or settings.export, captures)
    table: Iterable[tuple[str, str, Handler]] = (
        (hdrs.METH_GET, "/api/design-systems", routes.list_design_systems),
        (hdrs.METH_POST, "/api/design-systems", routes.create_design_system),
        (hdrs.METH_PATCH, "/api/design-systems/{system_id}", routes.update_design_system),
        (hdrs.METH_DELETE, "/api/design-systems/{system_id}", routes.delete_design_system),
        (hdrs.METH_POST, "/api/export", routes.export),
        (hdrs.METH_POST, "/api/screenshot", routes.screenshot),
    )
    for method, path, handler in table:
        app.router.add_route(method, path, _api(handler))


def _zip_response(archive: bytes) -> web.Response:
    return web.Response(
        body=archive,
        content_type="application/zip",
        headers={hdrs.CONTENT_DISPOSITION: 'attachment; filename="export.zip"'},
    )


def _export_code(
    fields: Mapping[str, Any], max_files: int, build: ProjectBuild = "none"
) -> str | dict[str, str]:
    """What to export: `code` (one page) or `files` (a project, by relative path, at most
    `max_files` of them: 0, no bound; a built project's paths by its build's rule, its
    page at dist/index.html)."""
    code, files = fields.get("code"), fields.get("files")
    if code is not None and files is not None:
        raise ApiError(400, "Give either code (one page) or files (a project), not both")
    if files is not None:
        if not isinstance(files, dict) or not files:
            raise ApiError(400, "files must be a non-empty object of path to content")
        if max_files and len(files) > max_files:
            raise ApiError(413, f"files: {too_many_files(len(files), max_files)}")
        seen = ProjectPaths((), build)
        for path, content in files.items():
            problem = None if build != "none" and path == BUILT_PATH else seen.problem(path)
            seen.add(path)
            if problem is not None:
                raise ApiError(
                    400, f"files: {json.dumps(path)[:80]} is not a project path: {problem}"
                )
            if not isinstance(content, str):
                raise ApiError(400, f"files[{json.dumps(path)[:80]}] must be a string")
        if not any(content.strip() for content in files.values()):
            raise ApiError(400, "There is no code to export")
        return files
    if not isinstance(code, str):
        raise ApiError(400, "code must be a string holding the page's HTML")
    if not code.strip():
        raise ApiError(400, "There is no code to export")
    return code
