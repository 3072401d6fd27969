"""The browser behind `screenshot_preview` (preview_tool.py): full-page desktop and mobile
PNGs of a page.

One Chromium per worker, launched on first use and relaunched if it dies. Each capture
renders both viewports at once, each in its own fresh browser context, so nothing (cookies,
storage, cache, service workers) leaks from one model's page into another's.

The page is untrusted model output. Its network access goes through two layers that share
the address rules of `services.common.netguard`: request routing refuses non-public targets
before Chromium sends anything, and the browser's only way out is an `EgressProxy`
(`egress_proxy.py`) that vets every connection, including the requests Chromium sends
around routing (beacons, pings, prefetches). The proxy serves only
requests carrying this process's random secret, which Playwright answers its 407 with
(each context is primed once, see `egress_proxy.AUTH_PROBE_URL`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from playwright.async_api import (
    Browser,
    Page,
    Playwright,
    Route,
    WebSocketRoute,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from services.common.babel_cdn import normalize_babel_cdn
from services.common.netguard import AddressGuard, Resolver, is_page_internal_url
from services.common.vendor import VendorCatalog
from services.common.vendor_route import route_offline
from services.tools.egress_proxy import (
    AUTH_PROBE_URL,
    EgressProxy,
    ProxyObserver,
    UpstreamOpener,
)
from services.tools.score_pages import KeptPages, NewPage
from services.tools.slots import FairSlots
from services.tools.spares import Spares
from services.tools.viewports import DESKTOP, VIEWPORTS, Capture, Viewport, page_clip, quietly

log = logging.getLogger(__name__)

R = TypeVar("R")

_CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",  # tool workers run as root in containers, where the sandbox cannot start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # WebRTC would otherwise send UDP straight to any address the page names, past the proxy.
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
)
# The pages one capture renders at once: the default desktop and mobile pair together, a
# screenshot's many tagged widths two by two (twenty at once took 2.3 GB, issue 35).
PAGES_AT_ONCE = 2


@dataclass(frozen=True)
class ScreenshotSettings:
    chromium_path: str = "/usr/bin/chromium"
    page_load_timeout_s: float = 15.0
    capture_timeout_s: float = 30.0
    settle_ms: int = 250
    # A loaded page's screenshot that has not come in this long never will: under CPU
    # contention Chromium now and then stops producing frames for a page, and nothing
    # wakes it. The render is then done again in a new page (docs/architecture.md,
    # "Stalled pages").
    stall_s: float = 10.0
    # Each capture renders up to two pages at once (`PAGES_AT_ONCE`); more pages than cores
    # only adds contention, so further captures queue (inside their own time limit). One
    # owner (a generation) runs at most this many captures at once...
    max_concurrent_captures: int = 2
    # ...and all owners together this many (S2C_PREVIEW_MAX_CAPTURES): a client's pages
    # waiting on assets that never come leave places to the others (slots.py).
    max_total_captures: int = 4
    # Fidelity scores render in places of their own, one per owner at a time, so a score
    # never takes a preview's place (S2C_FIDELITY_MAX_RENDERS).
    max_score_renders: int = 2
    # After a failed probe, how long `probe()` answers False before it tries a launch again.
    probe_retry_s: float = 60.0
    # A full page larger than this is clipped to it: Chromium renders only the clip (a
    # page 30000 px wide used to take gigabytes). The same limits as URL captures'.
    max_width_px: int = 1280
    max_height_px: int = 16384


class ScreenshotError(Exception):
    pass


class Screenshotter:
    """Owns the worker's Playwright driver, its Chromium and the egress proxy in front of it.

    Previews take pages made ahead of use (spares.py), each in its own fresh context.

    `resolver` and `upstream_opener` are the network seams of the guard (see `netguard`),
    `proxy_observer` sees every request reaching the proxy; production leaves them unset.
    `on_launch` hears the outcome of every launch of Chromium (None: it launched).
    `vendor` answers the stacks' CDN URLs from local copies (`vendor_route`), so a page
    renders styled with no network and without waiting on one; None sends them out.
    """

    def __init__(
        self,
        settings: ScreenshotSettings | None = None,
        *,
        resolver: Resolver | None = None,
        upstream_opener: UpstreamOpener | None = None,
        proxy_observer: ProxyObserver | None = None,
        on_launch: Callable[[BaseException | None], None] | None = None,
        vendor: VendorCatalog | None = None,
    ) -> None:
        self.settings = settings or ScreenshotSettings()
        self._on_launch = on_launch
        self._vendor = vendor
        self._guard = AddressGuard(resolver=resolver)
        self._proxy = EgressProxy(self._guard, opener=upstream_opener, observer=proxy_observer)
        self._lock = asyncio.Lock()
        settings = self.settings
        self._slots = FairSlots(settings.max_total_captures, settings.max_concurrent_captures)
        self._score_slots = FairSlots(settings.max_score_renders, 1)
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._probe_result: bool | None = None
        self._probed_at = 0.0
        self._background: set[asyncio.Task[None]] = set()
        self._spares = Spares(self._new_page, self._in_background)
        self._kept = KeptPages(self._new_page, self.settings.max_concurrent_captures)

    async def probe(self) -> bool:
        """Whether Chromium launches here: the outcome of the last launch, or of one made
        now when there was none yet, or when the last one failed `probe_retry_s` ago or
        more (a launch can fail for a while, e.g. out of memory)."""
        retry = self._probe_result is False and (
            time.monotonic() - self._probed_at >= self.settings.probe_retry_s
        )
        if self._probe_result is None or retry:
            try:
                await self._ready_browser()
            except Exception:
                log.warning(
                    "screenshot_preview unavailable: Chromium did not launch", exc_info=True
                )
        return bool(self._probe_result)

    async def warm(self) -> None:
        """Launch Chromium if needed and wait until the spare pages are ready.

        Also waits for the teardown of earlier captures, so the browser is idle afterwards.
        """
        await self._ready_browser()
        pending = [*self._spares.pending, *self._background]
        await asyncio.gather(*pending, return_exceptions=True)

    async def capture(
        self,
        html: str,
        *,
        timeout_s: float | None = None,
        viewports: Sequence[Viewport] = VIEWPORTS,
        owner: str = "",
    ) -> list[Capture]:
        """Captures of `html` at each viewport (desktop then mobile by default), rendered
        PAGES_AT_ONCE at a time in one of `owner`'s places.

        `timeout_s` can only shorten the configured capture limit, e.g. to honour the
        caller's remaining gRPC deadline.
        """
        html = normalize_babel_cdn(html)
        limit_s = self.settings.capture_timeout_s
        if timeout_s is not None:
            limit_s = min(limit_s, timeout_s)
        shots: list[asyncio.Task[Capture]] = []
        try:
            async with asyncio.timeout(limit_s), self._slots.hold(owner):
                browser = await self._ready_browser()
                for start in range(0, len(viewports), PAGES_AT_ONCE):
                    async with asyncio.TaskGroup() as group:
                        shots += [
                            group.create_task(self._shoot(browser, html, vp))
                            for vp in viewports[start : start + PAGES_AT_ONCE]
                        ]
        except TimeoutError as exc:
            raise ScreenshotError(f"capture timed out after {limit_s:g}s") from exc
        except ExceptionGroup as group_error:
            # Callers want the cause, not the concurrency wrapper around it.
            raise group_error.exceptions[0] from None
        finally:
            self._restock()
        return [shot.result() for shot in shots]

    async def evaluate_frames(self, html: str, expression: str) -> list[Any]:
        """Render `html` as a desktop capture would, then evaluate `expression` in every frame.

        A diagnostic (and test) hook: it shows what a page could read and write, e.g. whether
        a blocked resource's content ever reached the DOM. Frames that never loaded or refuse
        evaluation are reported as such instead.
        """
        html = normalize_babel_cdn(html)
        async with asyncio.timeout(self.settings.capture_timeout_s), self._slots.hold(""):
            browser = await self._ready_browser()
            async with self._rendered(browser, html, DESKTOP) as page:
                self._restock()
                results: list[Any] = []
                for frame in page.frames:
                    # A frame whose load was refused never commits a document (empty URL),
                    # and evaluating in it waits forever for a context that never comes.
                    if not frame.url:
                        results.append({"unloaded_frame": frame.name})
                        continue
                    try:
                        results.append(await frame.evaluate(expression))
                    except PlaywrightError:
                        results.append({"unevaluated_frame": frame.url})
                return results

    async def render_for_score(
        self,
        html: str,
        width: int,
        height: int,
        expression: str,
        *,
        timeout_s: float,
        owner: str = "",
        keep_for: str = "",
        then: Callable[[Page], Awaitable[None]] | None = None,
    ) -> tuple[bytes, Any]:
        """A full-page PNG of `html` at `width` × `height` and `expression` evaluated in
        it: the fidelity score's render (services/tools/fidelity.py). The same routing,
        proxy, load and pixel limits as a preview's, in places of the scores' own; in a
        page kept for the renders `keep_for` names, if any (score_pages.py). `then` runs
        in the page once the PNG is taken, within the same limit (the accessibility check:
        one load serves both, and nothing it does shows in the PNG)."""
        html = normalize_babel_cdn(html)
        viewport = Viewport("fidelity", width, height)
        limit_s = min(self.settings.capture_timeout_s, timeout_s)

        async def render(take: NewPage | None, stall_s: float) -> tuple[bytes, Any]:
            kept = keep_for if take is None else ""
            async with self._rendered(browser, html, viewport, kept, take) as page:
                data = await page.evaluate(expression)
                clip = await page_clip(page, width, self.settings.max_height_px)
                png = await page.screenshot(
                    full_page=True,
                    type="png",
                    clip=clip,
                    animations="disabled",
                    caret="hide",
                    timeout=stall_s * 1000,
                )
                if then is not None:
                    await then(page)
            return png, data

        try:
            async with asyncio.timeout(limit_s), self._score_slots.hold(owner):
                browser = await self._ready_browser()
                return await self._unstalled(render)
        except TimeoutError as exc:
            raise ScreenshotError(f"render timed out after {limit_s:g}s") from exc

    @property
    def guard(self) -> AddressGuard:
        """The address rules every request of this browser is vetted by."""
        return self._guard

    @contextlib.asynccontextmanager
    async def fresh_page(
        self, viewport: Viewport, *, touch: bool = False, user_agent: str | None = None
    ) -> AsyncIterator[Page]:
        """A page in a new context of this browser, behind the same routing and proxy as a
        preview. It takes none of the previews' slots: a caller bounds its own pages (URL
        captures have slots of their own, capture.py), so a generation's preview never
        waits behind a page somebody else asked for."""
        browser = await self._ready_browser()
        page = await self._new_page(browser, viewport, touch=touch, user_agent=user_agent)
        try:
            yield page
        finally:
            self._in_background(quietly(page.context.close()))

    async def close(self) -> None:
        async with self._lock:
            self._spares.discard_all()
            await asyncio.gather(*self._background, return_exceptions=True)
            await self._kept.close()
            browser, self._browser = self._browser, None
            driver, self._playwright = self._playwright, None
            if browser is not None:
                await quietly(browser.close())
            if driver is not None:
                await quietly(driver.stop())
            await self._proxy.close()

    async def _ready_browser(self) -> Browser:
        async with self._lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            if self._browser is not None:
                log.warning("Chromium disconnected; relaunching")
                await quietly(self._browser.close())
                self._browser = None
            try:
                browser = await self._launch()
            except Exception as exc:
                self._launched(exc)
                raise
            self._launched(None)
            self._browser = browser
            self._spares.discard_all()
            self._spares.restock(browser)
            return browser

    async def _launch(self) -> Browser:
        proxy_url = await self._proxy.start()
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        return await self._playwright.chromium.launch(
            executable_path=self.settings.chromium_path,
            args=[
                *_CHROMIUM_ARGS,
                # Chromium never proxies loopback by default; "<-loopback>" undoes that
                # exemption so 127.0.0.1 reaches the guard like any other host.
                "--proxy-bypass-list=<-loopback>",
            ],
            # Chromium takes no credentials in --proxy-server; Playwright answers the
            # proxy's 407 challenge with these in every context.
            proxy={
                "server": proxy_url,
                "username": self._proxy.username,
                "password": self._proxy.password,
            },
            timeout=self.settings.capture_timeout_s * 1000,
        )

    def _launched(self, error: BaseException | None) -> None:
        # The driver not starting (e.g. a missing library) counts as a failed launch too.
        self._probe_result, self._probed_at = error is None, time.monotonic()
        if self._on_launch is not None:
            self._on_launch(error)

    async def _shoot(self, browser: Browser, html: str, viewport: Viewport) -> Capture:
        async def shoot(take: NewPage | None, stall_s: float) -> Capture:
            async with self._rendered(browser, html, viewport, take=take) as page:
                # A viewport wider than the limit (a screenshot tagged 1920 px) is shown whole.
                max_width = max(self.settings.max_width_px, viewport.width)
                clip = await page_clip(page, max_width, self.settings.max_height_px)
                png = await page.screenshot(
                    full_page=True, type="png", clip=clip, timeout=stall_s * 1000
                )
            return Capture(viewport, png, full_page=clip is None)

        return await self._unstalled(shoot)

    async def _unstalled(self, render: Callable[[NewPage | None, float], Awaitable[R]]) -> R:
        """`render(None, stall_s)`: in a spare or kept page, its screenshot given
        `settings.stall_s`; if that stalls, `render` again in a new page, its screenshot given
        the rest of the caller's limit (which bounds both)."""
        try:
            return await render(None, self.settings.stall_s)
        except PlaywrightTimeoutError:
            log.warning("screenshot stalled; rendering again in a new page")
            return await render(self._new_page, self.settings.capture_timeout_s)

    @contextlib.asynccontextmanager
    async def _rendered(
        self,
        browser: Browser,
        html: str,
        viewport: Viewport,
        keep_for: str = "",
        take: NewPage | None = None,
    ) -> AsyncIterator[Page]:
        page = await self._kept.take(browser, viewport, keep_for, take or self._spares.take)
        try:
            # One budget for the page's loads and its fonts together: a stylesheet and a
            # font that never answer hold the place for it once, not twice.
            loaded_by = time.monotonic() + self.settings.page_load_timeout_s
            # A slow or never-idle page is still worth a screenshot of what did render.
            with contextlib.suppress(PlaywrightTimeoutError):
                await page.set_content(
                    html,
                    wait_until="networkidle",
                    timeout=self.settings.page_load_timeout_s * 1000,
                )
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, loaded_by - time.monotonic())):
                    await page.evaluate("document.fonts.ready.then(() => true)")
            # What has not come by now never will in time: stop it, as a reader would, or the
            # screenshot (which waits for the page's fonts) holds the place to the limit.
            with contextlib.suppress(PlaywrightError):
                await page.evaluate("window.stop()")
            if self.settings.settle_ms > 0:
                await asyncio.sleep(self.settings.settle_ms / 1000)  # let late layout land
            yield page
        except BaseException:
            # Not kept after a failed render: a stalled page would stall the next one too.
            self._in_background(self._kept.give_back(browser, page, ""))
            raise
        else:
            self._in_background(self._kept.give_back(browser, page, keep_for))

    async def _new_page(
        self,
        browser: Browser,
        viewport: Viewport,
        *,
        touch: bool = False,
        user_agent: str | None = None,
    ) -> Page:
        context = await browser.new_context(
            viewport={"width": viewport.width, "height": viewport.height},
            device_scale_factor=1,
            has_touch=touch,
            user_agent=user_agent,
            service_workers="block",
            accept_downloads=False,
        )
        try:
            page = await context.new_page()
            # Before any route exists, so nothing but the proxy sees it (see egress_proxy).
            await page.goto(AUTH_PROBE_URL, timeout=self.settings.page_load_timeout_s * 1000)
            await page.goto("about:blank")
            await route_offline(context, self._vendor, self._route_request)
            await context.route_web_socket(lambda _url: True, self._route_websocket)
            return page
        except BaseException:
            await quietly(context.close())
            raise

    def _restock(self) -> None:
        # Once a capture is done with the CPU (spares.py).
        if self._browser is not None and self._browser.is_connected():
            self._spares.restock(self._browser)

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        # Teardown the caller need not wait for; close() still does.
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _route_request(self, route: Route) -> None:
        url = route.request.url
        try:
            if is_page_internal_url(url) or await self._guard.allows_url(url):
                await route.continue_()
            else:
                await route.abort("blockedbyclient")
        except PlaywrightError:
            pass  # the context closed while we decided; nothing is left to release

    async def _route_websocket(self, socket: WebSocketRoute) -> None:
        try:
            if await self._guard.allows_url(socket.url):
                socket.connect_to_server()
            else:
                await socket.close(code=1008, reason="blocked by the preview sandbox")
        except Exception:  # never raised: Playwright would fail another user's next call
            log.info("websocket route failed (the page may be gone); closed", exc_info=True)
            with contextlib.suppress(Exception):
                await socket.close(code=1011, reason="the preview sandbox failed")
