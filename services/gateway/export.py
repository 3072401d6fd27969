"""Export: the page as a zip of `index.html` and the images it uses, `assets/image-N.ext`;
a project of several files (a site of several pages) as each file under its own path at
the zip's root, sharing one `assets/` folder.

Bundled references are rewritten to their copies, so the page works offline and outlives
short-lived URLs (Replicate outputs expire). References are found by a linear scan of the
raw text (`export_markup`), not a parsed and re-serialised DOM, so nothing else in the
page changes; that work runs in a worker thread within a time budget.

The page is model output, so its URLs are untrusted. Remote images come only from public
addresses (`services.common.netguard`): every redirect hop is vetted again, and connections
go to the vetted addresses, never to a name resolved again later (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import base64
import io
import ipaddress
import logging
import re
import socket
import time
import zipfile
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal, TypeVar
from urllib.parse import unquote, unquote_to_bytes, urljoin, urlsplit, urlunsplit

import aiohttp
from aiohttp import hdrs
from aiohttp.abc import AbstractResolver, ResolveResult

from services.common import netguard
from services.common.babel_cdn import normalize_babel_cdn
from services.common.vendor import VendorCatalog
from services.gateway.bodies import read_capped
from services.gateway.export_markup import (
    IMAGE_EXTS,
    CpuBudget,
    ExportTooComplex,
    path_ext,
    rewrite_references,
)
from services.gateway.export_vendor import bundle_runtimes

log = logging.getLogger(__name__)

_T = TypeVar("_T")

# host, port -> the addresses it may be reached at; () refuses the host.
HostVetter = Callable[[str, int], Awaitable[Sequence[str]]]

LOCAL_ASSETS_PREFIX = "/local-assets/"
_STYLE_OPEN, _STYLE_CLOSE = "<style>", "</style>"

_CONTENT_TYPE_EXT = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/jpg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/svg+xml": "svg",
    "image/avif": "avif",
    "image/x-icon": "ico",
    "image/vnd.microsoft.icon": "ico",
    "image/bmp": "bmp",
}
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_ASSET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


class ExportBusy(Exception):
    """No transform slot came free within the time budget."""


@dataclass(frozen=True, slots=True)
class ExportPolicy:
    max_assets: int = 50
    max_asset_bytes: int = 20 * 1024 * 1024
    # Not an upstream limit: fifty assets of 20 MiB each would otherwise be a gigabyte
    # held in memory for one unauthenticated request.
    max_total_bytes: int = 100 * 1024 * 1024
    max_redirects: int = 5
    timeout_s: float = 20.0
    concurrency: int = 8
    vet: HostVetter = netguard.resolve_public
    # The request body `/api/export` accepts: a page, not an upload (S2C_EXPORT_MAX_BYTES).
    max_body_bytes: int = 8 * 1024 * 1024
    # CPU time budget for reading and rewriting the page, off the event loop
    # (S2C_EXPORT_TRANSFORM_S); the scan is linear, so this is a backstop, not a guard.
    transform_timeout_s: float = 10.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ExportPolicy:
        defaults = cls()
        max_body = int(env.get("S2C_EXPORT_MAX_BYTES", defaults.max_body_bytes))
        timeout = float(env.get("S2C_EXPORT_TRANSFORM_S", defaults.transform_timeout_s))
        if max_body <= 0 or timeout <= 0:
            raise ValueError("S2C_EXPORT_MAX_BYTES and S2C_EXPORT_TRANSFORM_S must be positive")
        return cls(max_body_bytes=max_body, transform_timeout_s=timeout)


# --- Where a reference's bytes come from ---


@dataclass(frozen=True, slots=True)
class Source:
    kind: Literal["data", "local", "remote"]
    # The data URL, the file name in the asset dir, or the absolute http(s) URL.
    value: str


# Log lines name a data URL by its kind only: its content may be megabytes.
_DATA_URL = Source("data", "")


def classify(reference: str, base_url: str | None, own_hosts: frozenset[str]) -> Source | None:
    """Where `reference` can be loaded from, or None when it is not something we bundle."""
    ref = reference.strip()
    if not ref or ref.startswith("#"):
        return None
    if ref[:5].lower() == "data:":
        return Source("data", ref) if ref[5:11].lower() == "image/" else None
    try:
        if not urlsplit(ref).scheme:
            if not base_url and not ref.startswith("//"):
                return None
            ref = urljoin(base_url or "https:", ref)
        parts = urlsplit(ref)
        host = (parts.hostname or "").rstrip(".")
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None
    if parts.path.startswith(LOCAL_ASSETS_PREFIX) and (host in own_hosts or _is_loopback(host)):
        name = unquote(parts.path[len(LOCAL_ASSETS_PREFIX) :])
        valid = _ASSET_NAME.fullmatch(name) is not None and ".." not in name
        return Source("local", name) if valid else None
    return Source("remote", urlunsplit(parts._replace(fragment="")))


def _is_loopback(host: str) -> bool:
    if host in ("localhost", "0.0.0.0") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Asset:
    data: bytes
    ext: str


_NUMERIC = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


def _af(address: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ipaddress.ip_address(address).version == 6 else socket.AF_INET


class _VettedResolver(AbstractResolver):
    """Name resolution for the fetch session: only vetted addresses are ever connected to."""

    def __init__(self, vet: HostVetter) -> None:
        self._vet = vet

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        # `family` is not filtered on: our connector asks for any, and each answer carries
        # its own family for the socket aiohttp opens.
        results = [
            ResolveResult(hostname=host, host=a, port=port, family=_af(a), proto=0, flags=_NUMERIC)
            for a in await self._vet(host, port)
        ]
        if not results:
            raise OSError(f"{host} does not resolve to public addresses only")
        return results

    async def close(self) -> None:
        return None


class _Loader:
    def __init__(
        self, session: aiohttp.ClientSession, assets_dir: Path | None, policy: ExportPolicy
    ) -> None:
        self._session = session
        self._assets_dir = assets_dir
        self._policy = policy
        self._slots = asyncio.Semaphore(policy.concurrency)

    async def load(self, source: Source) -> Asset | None:
        async with self._slots:
            try:
                if source.kind == "data":
                    return self._decode_data_url(source.value)
                if source.kind == "local":
                    return await asyncio.to_thread(self._read_local, source.value)
                return await self._fetch(source.value)
            except (aiohttp.ClientError, OSError, ValueError) as exc:
                _skipped(source, f"{type(exc).__name__}: {exc}")
                return None

    def _decode_data_url(self, url: str) -> Asset | None:
        header, comma, payload = url.partition(",")
        media_type, *params = header[5:].split(";")
        ext = _CONTENT_TYPE_EXT.get(media_type.strip().lower())
        if not comma or ext is None:
            return None
        if "base64" in (p.strip().lower() for p in params):
            compact = "".join(payload.split())
            # Invalid base64 raises binascii.Error, a ValueError: `load` logs and skips it.
            data = base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
        else:
            data = unquote_to_bytes(payload)
        if len(data) > self._policy.max_asset_bytes:
            return _skipped(_DATA_URL, "too large")
        return Asset(data, ext)

    def _read_local(self, name: str) -> Asset | None:
        # A deliberate improvement over upstream, which sent these loopback URLs through
        # its public-address check and so silently left every saved or extracted asset
        # out of the zip: they are our own files, read straight from the asset dir.
        ext = PurePosixPath(name).suffix.lower().lstrip(".")
        if self._assets_dir is None or ext not in IMAGE_EXTS:
            return _skipped(Source("local", name), "not a local image")
        root = self._assets_dir.resolve()
        path = (root / name).resolve()
        if path.parent != root or not path.is_file():
            return _skipped(Source("local", name), "no such asset")
        with path.open("rb") as file:
            data = file.read(self._policy.max_asset_bytes + 1)
        if len(data) > self._policy.max_asset_bytes:
            return _skipped(Source("local", name), "too large")
        return Asset(data, ext)

    async def _fetch(self, url: str) -> Asset | None:
        source = Source("remote", url)
        for _ in range(self._policy.max_redirects + 1):
            target = netguard.network_target(url)
            if target is None or urlsplit(url).scheme.lower() not in ("http", "https"):
                return _skipped(source, "not an http(s) URL")
            if not await self._policy.vet(*target):
                return _skipped(source, "not a public address")
            async with self._session.get(url, allow_redirects=False) as response:
                if response.status in _REDIRECT_STATUSES:
                    location = response.headers.get(hdrs.LOCATION)
                    if not location:
                        return _skipped(source, "redirect without a Location")
                    url = urljoin(url, location)
                    continue
                if response.status != 200:
                    return _skipped(source, f"HTTP {response.status}")
                ext = _remote_ext(response.content_type, url)
                if ext is None:
                    return _skipped(source, f"not an image ({response.content_type})")
                data = await self._read_capped(response)
                return Asset(data, ext) if data is not None else _skipped(source, "too large")
        return _skipped(source, f"more than {self._policy.max_redirects} redirects")

    async def _read_capped(self, response: aiohttp.ClientResponse) -> bytes | None:
        return await read_capped(
            response.content, response.content_length, self._policy.max_asset_bytes
        )


def _remote_ext(content_type: str, url: str) -> str | None:
    ext = _CONTENT_TYPE_EXT.get(content_type.lower())
    if ext is not None:
        return ext
    # Some storage buckets serve every object as octet-stream; the name must say image.
    untyped = content_type.startswith("image/") or content_type.endswith("octet-stream")
    url_ext = path_ext(urlsplit(url).path)
    return url_ext if untyped and url_ext in IMAGE_EXTS else None


def _skipped(source: Source, reason: str) -> Asset | None:
    """Logs why `source` stays as it is; answers None, "nothing loaded", for `return`."""
    shown = "a data URL" if source.kind == "data" else source.value[:200]
    log.info("export: asset left as it is", extra={"asset": shown, "reason": reason})
    return None


async def _load_all(
    sources: Sequence[Source], assets_dir: Path | None, policy: ExportPolicy
) -> dict[Source, Asset]:
    if not sources:
        return {}
    connector = aiohttp.TCPConnector(
        resolver=_VettedResolver(policy.vet), use_dns_cache=False, limit=policy.concurrency
    )
    # No environment proxies (they would do the resolving) and no cookies between hops.
    async with aiohttp.ClientSession(
        connector=connector,
        trust_env=False,
        cookie_jar=aiohttp.DummyCookieJar(),
        timeout=aiohttp.ClientTimeout(total=policy.timeout_s),
        headers={hdrs.ACCEPT: "image/*"},
    ) as session:
        loader = _Loader(session, assets_dir, policy)
        tasks = {source: asyncio.create_task(loader.load(source)) for source in sources}
        # One deadline for the whole export: what is not in by then stays a remote link.
        _, pending = await asyncio.wait(tasks.values(), timeout=policy.timeout_s)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    loaded: dict[Source, Asset] = {}
    for source, task in tasks.items():
        if task in pending:
            _skipped(source, "export deadline passed")
        elif (asset := task.result()) is not None:
            loaded[source] = asset
    return loaded


# --- The export ---


async def build_export(
    code: str | Mapping[str, str],
    base_url: str | None = None,
    *,
    assets_dir: Path | None = None,
    own_hosts: Iterable[str] = (),
    policy: ExportPolicy | None = None,
    cpu_slots: asyncio.Semaphore | None = None,
    runtimes: VendorCatalog | None = None,
) -> bytes:
    """The zip for `code`: one page (`index.html`), or files by relative path (checked by
    the caller). References that cannot be bundled are left as they are; a script's are
    never looked for.

    With `runtimes`, the page's CDN runtimes are bundled too (`export_vendor`): the zip is
    self-contained.

    `own_hosts`: names this gateway is reached by; their `/local-assets/` URLs are read
    from `assets_dir`, like loopback ones. The page is read and rewritten in a worker
    thread, one `cpu_slots` place at a time, within `policy.transform_timeout_s` of CPU
    time (`ExportTooComplex`), waiting at most that long for a place (`ExportBusy`).
    """
    policy = policy or ExportPolicy()
    deadline = time.monotonic() + policy.transform_timeout_s
    budget = CpuBudget(policy.transform_timeout_s)
    hosts = frozenset(h.lower().rstrip(".") for h in own_hosts)
    sources: dict[str, Source | None] = {}
    unique: dict[Source, None] = {}

    def collect(reference: str) -> None:
        if reference in sources:
            return
        source = sources[reference] = classify(reference, base_url, hosts)
        if source is not None and (source in unique or len(unique) < policy.max_assets):
            unique[source] = None
        elif source is not None:
            sources[reference] = None  # over the asset limit: stays as it is

    project = {"index.html": code} if isinstance(code, str) else dict(code)
    # A stylesheet is read as the body of a <style> element, where the scanner finds its
    # url()s; the wrapper comes off again after the rewrite (`_unwrapped`).
    scanned = {
        path: f"{_STYLE_OPEN}{text}{_STYLE_CLOSE}" if path.endswith(".css") else text
        for path, text in project.items()
        if not path.endswith(".js")
    }

    def scan() -> None:
        for text in scanned.values():
            rewrite_references(text, collect, budget=budget)

    await _off_loop(scan, deadline, cpu_slots)
    loaded = await _load_all(list(unique), assets_dir, policy)

    names: dict[Source, str] = {}
    files: list[tuple[str, Asset]] = []
    total = 0
    for source in unique:
        asset = loaded.get(source)
        if asset is None:
            continue
        if total + len(asset.data) > policy.max_total_bytes:
            _skipped(source, "export size limit reached")
            continue
        total += len(asset.data)
        names[source] = f"assets/image-{len(names) + 1}.{asset.ext}"
        files.append((names[source], asset))

    def finish() -> bytes:
        out: dict[str, str] = {}
        bundled: dict[str, bytes] = {}
        for path, text in project.items():
            if path not in scanned:
                out[path] = text
                continue
            # The assets folder is at the zip's root, so a file in a folder climbs to it.
            up = "../" * path.count("/")

            def replace(reference: str, up: str = up) -> str | None:
                source = sources.get(reference)
                name = None if source is None else names.get(source)
                return None if name is None else up + name

            page = rewrite_references(scanned[path], replace, budget=budget)
            if path.endswith(".css"):
                out[path] = page[len(_STYLE_OPEN) : -len(_STYLE_CLOSE)]
                continue
            page = normalize_babel_cdn(page)
            if runtimes is not None:
                page, bundle = bundle_runtimes(page, runtimes, up)
                bundled.update(bundle.files)
            out[path] = page
        return _zip(out, files, bundled, budget)

    return await _off_loop(finish, deadline, cpu_slots)


async def _off_loop(work: Callable[[], _T], deadline: float, slots: asyncio.Semaphore | None) -> _T:
    if slots is None:
        return await asyncio.to_thread(work)
    try:
        async with asyncio.timeout_at(_loop_time(deadline)):
            await slots.acquire()
    except TimeoutError:
        raise ExportBusy() from None
    try:
        # Not cancelled on the deadline: a thread cannot be stopped from outside, so the
        # work checks the deadline itself and is linear in a page of bounded size.
        return await asyncio.to_thread(work)
    finally:
        slots.release()


def _loop_time(deadline: float) -> float:
    """`deadline` on `time.monotonic()`'s clock, on the running loop's clock."""
    loop = asyncio.get_running_loop()
    return loop.time() + (deadline - time.monotonic())


def _zip(
    pages: Mapping[str, str],
    files: Sequence[tuple[str, Asset]],
    extra: Mapping[str, bytes],
    budget: CpuBudget,
) -> bytes:
    """The archive, within what is left of `budget` (checked between entries: each is
    at most an asset's size), else ExportTooComplex."""
    started = time.thread_time()
    entries: list[tuple[str, str | bytes]] = [
        *pages.items(),
        *((name, asset.data) for name, asset in files),
        *sorted(extra.items()),
    ]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            if budget.over(time.thread_time() - started):
                raise ExportTooComplex()
            archive.writestr(name, data)
    budget.spend(time.thread_time() - started)
    return buffer.getvalue()
