"""`/vendor/`: the local copies of the stacks' CDN runtimes, for the built-in UI's preview.

The preview rewrites the CDN hosts of `vendor_urls.CDN_HOSTS` in the code it renders (never
in the code the user copies, downloads or exports) to `/vendor/<digest>/cdn/<host>/…`, and
this route answers each such URL with `VendorCatalog.answer`, the same map the tool workers
and eval route through. Everything below `/vendor/<digest>/` is immutable: the digest names
the manifest, so a changed byte is a new path, and the answers are cached for a year.

A CDN URL we do not carry (another jsdelivr package, a font family we do not ship) is
redirected to the CDN itself, so the page behaves as it would have without the rewrite.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from urllib.parse import quote

from aiohttp import web

from services.common.vendor import Answer, VendorCatalog, VendorError
from services.common.vendor_fonts import BadFontsRequest
from services.common.vendor_urls import CDN_HOSTS

log = logging.getLogger(__name__)

PREFIX = "/vendor/"
IMMUTABLE = "public, max-age=31536000, immutable"
VENDOR_KEY = web.AppKey("vendor", object)  # VendorCatalog | None; object: AppKey wants a type


def catalog_of(app: web.Application) -> VendorCatalog | None:
    catalog = app.get(VENDOR_KEY)
    return catalog if isinstance(catalog, VendorCatalog) else None


def file_path(digest: str, rel: str) -> str:
    return f"{PREFIX}{digest}/files/{quote(rel)}"


async def vendor_index(request: web.Request) -> web.Response:
    """Where the preview finds the copies, and which hosts it may rewrite to them."""
    catalog = catalog_of(request.app)
    headers = {"Cache-Control": "no-cache"}
    if catalog is None:
        body: dict[str, object] = {"available": False, "hosts": []}
        return web.json_response(body, headers=headers)
    body = {"available": True, "base": f"{PREFIX}{catalog.digest}/cdn/", "hosts": CDN_HOSTS}
    return web.json_response(body, headers=headers)


async def vendor_cdn(request: web.Request) -> web.StreamResponse:
    catalog = _catalog(request)
    target = request.match_info["target"]
    if target.split("/", 1)[0].lower() not in CDN_HOSTS:
        raise _not_found("not a CDN the preview mirrors")  # and never an open redirect
    if request.match_info["digest"] != catalog.digest:
        # Written by a UI opened before the copies changed: the same URL, current digest.
        fresh = request.rel_url.path_qs.replace(
            f"{PREFIX}{request.match_info['digest']}/", f"{PREFIX}{catalog.digest}/", 1
        )
        raise web.HTTPTemporaryRedirect(fresh)
    query = request.query_string
    url = f"https://{target}" + (f"?{query}" if query else "")
    digest = catalog.digest
    answer = await _off_loop(lambda: catalog.answer(url, lambda rel: file_path(digest, rel)))
    if answer is None:
        raise web.HTTPTemporaryRedirect(url)
    return _respond(answer)


async def vendor_file(request: web.Request) -> web.StreamResponse:
    catalog = _catalog(request)
    rel = request.match_info["rel"]
    if request.match_info["digest"] != catalog.digest or rel not in catalog.hashes:
        raise _not_found("no such vendored file")
    answer = await _off_loop(lambda: catalog.read(rel))
    assert answer is not None
    return _respond(answer)


def _catalog(request: web.Request) -> VendorCatalog:
    catalog = catalog_of(request.app)
    if catalog is None:
        raise _not_found("the vendored CDN copies are not installed (make install)")
    return catalog


def _not_found(detail: str) -> web.HTTPNotFound:
    return web.HTTPNotFound(text=json.dumps({"detail": detail}), content_type="application/json")


async def _off_loop(work: Callable[[], Answer | None]) -> Answer | None:
    try:
        # In a thread: a file's first read is hashed (Babel is 3 MB).
        return await asyncio.to_thread(work)
    except BadFontsRequest as exc:
        # The page's own mistake, answered as Google answers it.
        raise web.HTTPBadRequest(
            text=json.dumps({"detail": f"Bad Google Fonts request: {exc}"}),
            content_type="application/json",
        ) from None
    except (VendorError, OSError) as exc:
        log.error("vendored file refused", extra={"reason": str(exc)})
        raise web.HTTPServiceUnavailable(
            text=json.dumps({"detail": "a vendored file failed its integrity check"}),
            content_type="application/json",
        ) from None


def _respond(answer: Answer) -> web.Response:
    return web.Response(
        body=answer.body,
        headers={
            "Content-Type": answer.content_type,
            "Cache-Control": IMMUTABLE,
            # Preview frames have an opaque origin; module scripts and fonts need CORS.
            "Access-Control-Allow-Origin": "*",
            "X-Content-Type-Options": "nosniff",
        },
    )


def add_vendor_routes(app: web.Application, catalog: VendorCatalog | None) -> None:
    app[VENDOR_KEY] = catalog
    app.router.add_get(f"{PREFIX}index.json", vendor_index)
    app.router.add_get(PREFIX + "{digest}/cdn/{target:.+}", vendor_cdn)
    app.router.add_get(PREFIX + "{digest}/files/{rel:.+}", vendor_file)
