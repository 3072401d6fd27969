"""Export zips: references found, assets loaded within the limits and rewritten.

Remote assets come from a local aiohttp server standing in for a CDN. The real guard
refuses loopback, so tests that need a fetch to succeed vet `cdn.test` (and
`replicate.delivery`) to 127.0.0.1 and leave every other name to the real guard.
"""

from __future__ import annotations

import asyncio
import base64
import io
import re
import zipfile
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import quote

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from hypothesis import given
from hypothesis import strategies as st

from services.common import netguard
from services.common.babel_cdn import PINNED_BABEL_URL
from services.gateway.export import (
    ExportBusy,
    ExportPolicy,
    HostVetter,
    build_export,
    classify,
)
from services.gateway.export_markup import CpuBudget, ExportTooComplex, rewrite_references

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
WEBP = b"RIFF\x00\x00\x00\x00WEBPVP8 "
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4"/></svg>'
PNG_DATA_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
SVG_DATA_URL = "data:image/svg+xml," + quote(SVG)


def vet_as_loopback(*names: str) -> HostVetter:
    async def vet(host: str, port: int) -> Sequence[str]:
        if host in names:
            return ("127.0.0.1",)
        return await netguard.resolve_public(host, port)

    return vet


LENIENT = ExportPolicy(vet=vet_as_loopback("cdn.test", "replicate.delivery"))


@dataclass
class Cdn:
    port: int
    hits: Counter[str] = field(default_factory=Counter)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str, host: str = "cdn.test") -> str:
        return f"http://{host}:{self.port}{path}"


@pytest.fixture
async def cdn() -> AsyncIterator[Cdn]:
    state = Cdn(port=0)

    async def handle(request: web.Request) -> web.StreamResponse:
        path = request.path
        state.hits[path] += 1
        if path.startswith("/r/"):
            left = int(path.removeprefix("/r/"))
            if left:
                raise web.HTTPFound(f"/r/{left - 1}")
            return web.Response(body=PNG, content_type="image/png")
        if path.startswith("/sized/"):
            return web.Response(
                body=b"x" * int(path.removeprefix("/sized/")), content_type="image/png"
            )
        if path.startswith("/chunked/"):
            response = web.StreamResponse(headers={"Content-Type": "image/png"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            for _ in range(int(path.removeprefix("/chunked/"))):
                await response.write(b"x")
            await response.write_eof()
            return response
        if path == "/to-private":
            raise web.HTTPFound(f"http://127.0.0.1:{state.port}/secret.png")
        if path == "/slow.png":
            await state.release.wait()
        if path == "/page.html":
            return web.Response(text="<html></html>", content_type="text/html")
        if path == "/bucket/photo.jpg":
            return web.Response(body=PNG, content_type="application/octet-stream")
        if path.startswith("/replicate/"):
            return web.Response(body=WEBP, content_type="image/webp")
        if path.endswith(".png"):
            return web.Response(body=PNG, content_type="image/png")
        raise web.HTTPNotFound()

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    server = TestServer(app)
    await server.start_server()
    assert server.port is not None
    state.port = server.port
    try:
        yield state
    finally:
        state.release.set()
        await server.close()


def unzip(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


async def export(
    code: str,
    base_url: str | None = None,
    *,
    assets_dir: Path | None = None,
    policy: ExportPolicy | None = None,
) -> dict[str, bytes]:
    return unzip(await build_export(code, base_url, assets_dir=assets_dir, policy=policy))


async def test_data_url_png_and_svg_are_bundled_and_rewritten() -> None:
    code = f'<img src="{PNG_DATA_URL}"><img alt="logo" src="{SVG_DATA_URL}">'
    files = await export(code)
    assert sorted(files) == ["assets/image-1.png", "assets/image-2.svg", "index.html"]
    assert files["assets/image-1.png"] == PNG
    assert files["assets/image-2.svg"].decode() == SVG
    assert files["index.html"].decode() == (
        '<img src="assets/image-1.png"><img alt="logo" src="assets/image-2.svg">'
    )


async def test_an_image_url_in_a_babel_script_is_rewritten(cdn: Cdn) -> None:
    photo, api = cdn.url("/photo.png"), cdn.url("/api/data")
    generated = cdn.url("/replicate/out", "replicate.delivery")
    code = (
        '<script type="text/babel">\n'
        f'const App = () => <div><img src="{photo}" /><img src="{generated}" /></div>;\n'
        f'fetch("{api}");\n'
        "</script>"
    )
    files = await export(code, policy=LENIENT)
    assert files["assets/image-1.png"] == PNG
    assert files["assets/image-2.webp"] == WEBP
    page = files["index.html"].decode()
    assert 'src="assets/image-1.png"' in page
    assert 'src="assets/image-2.webp"' in page
    assert api in page
    # Only image-looking URLs in scripts are fetched at all.
    assert cdn.hits["/api/data"] == 0


async def test_a_page_without_assets_gives_only_index_html() -> None:
    code = "<html><body><h1>Hello</h1><a href='https://example.com/x.png'>x</a></body></html>"
    files = await export(code)
    assert files == {"index.html": code.encode()}


async def test_the_babel_cdn_url_is_pinned() -> None:
    code = '<script src="https://unpkg.com/@babel/standalone/babel.min.js"></script>'
    files = await export(code)
    assert files["index.html"].decode() == f'<script src="{PINNED_BABEL_URL}"></script>'


def test_every_reference_kind_is_collected() -> None:
    code = (
        f'<link rel="apple-touch-icon" href="{PNG_DATA_URL}">'
        f'<link rel="stylesheet" href="{PNG_DATA_URL}#not-an-icon">'
        f"<style>@import url('{PNG_DATA_URL}#css');"
        f".hero {{ background: url('{PNG_DATA_URL}#a') }}</style>"
        f'<picture><source srcset="{PNG_DATA_URL}#b 1x, {PNG_DATA_URL}#c 2x"></picture>'
        f'<div style="background-image: url(&quot;{PNG_DATA_URL}#d&quot;)"></div>'
        f'<svg><image href="{PNG_DATA_URL}#e"/><image xlink:href="{PNG_DATA_URL}#f"/></svg>'
        f"<!-- <img src='{PNG_DATA_URL}#comment'> -->"
    )
    seen: list[str] = []

    def visit(reference: str) -> None:
        seen.append(reference.removeprefix(PNG_DATA_URL))

    rewrite_references(code, visit)
    assert seen == ["", "#a", "#b", "#c", "#d", "#e", "#f"]


async def test_one_url_referenced_twice_is_one_asset() -> None:
    code = f'<img src="{PNG_DATA_URL}"><div style="background:url({PNG_DATA_URL})"></div>'
    files = await export(code)
    assert sorted(files) == ["assets/image-1.png", "index.html"]
    assert files["index.html"].decode().count("assets/image-1.png") == 2


async def test_local_assets_are_read_from_the_data_dir(tmp_path: Path, cdn: Cdn) -> None:
    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / "asset_abc123.png").write_bytes(PNG)
    (tmp_path / "secret.png").write_bytes(b"secret")
    (assets / "link.png").symlink_to(tmp_path / "secret.png")
    traversal = f"http://127.0.0.1:{cdn.port}/local-assets/..%2Fsecret.png"
    code = (
        f'<img src="http://127.0.0.1:{cdn.port}/local-assets/asset_abc123.png">'
        '<img src="/local-assets/asset_abc123.png">'
        f'<img src="http://localhost:{cdn.port}/local-assets/link.png">'
        f'<img src="{traversal}">'
        f'<img src="http://localhost:{cdn.port}/local-assets/missing.png">'
    )
    files = await export(code, f"http://localhost:{cdn.port}/", assets_dir=assets)
    assert sorted(files) == ["assets/image-1.png", "index.html"]
    assert files["assets/image-1.png"] == PNG
    page = files["index.html"].decode()
    assert page.count('src="assets/image-1.png"') == 2
    assert traversal in page
    assert "/local-assets/link.png" in page
    # Read from disk, never fetched: the loopback server saw nothing.
    assert sum(cdn.hits.values()) == 0


async def test_remote_urls_on_loopback_are_refused_without_a_request(cdn: Cdn) -> None:
    urls = [
        f"http://127.0.0.1:{cdn.port}/a.png",
        f"http://localhost:{cdn.port}/b.png",
        f"http://[::ffff:127.0.0.1]:{cdn.port}/c.png",
        f"http://0.0.0.0:{cdn.port}/d.png",
    ]
    code = "".join(f'<img src="{url}">' for url in urls)
    files = await export(code)
    assert files == {"index.html": code.encode()}
    assert sum(cdn.hits.values()) == 0


async def test_a_redirect_to_a_private_address_is_refused(cdn: Cdn) -> None:
    code = f'<img src="{cdn.url("/to-private")}">'
    files = await export(code, policy=LENIENT)
    assert files == {"index.html": code.encode()}
    assert cdn.hits["/to-private"] == 1
    assert cdn.hits["/secret.png"] == 0


async def test_redirects_are_followed_up_to_the_limit(cdn: Cdn) -> None:
    policy = replace(LENIENT, max_redirects=2)
    within, beyond = cdn.url("/r/2"), cdn.url("/r/3")
    files = await export(f'<img src="{within}"><img src="{beyond}">', policy=policy)
    assert files["assets/image-1.png"] == PNG
    assert files["index.html"].decode() == f'<img src="assets/image-1.png"><img src="{beyond}">'
    assert cdn.hits["/r/0"] == 1  # reached only by the chain within the limit
    assert cdn.hits["/r/1"] == 2


async def test_assets_over_the_size_limit_are_left_out(cdn: Cdn) -> None:
    policy = replace(LENIENT, max_asset_bytes=len(PNG))
    big_data_url = "data:image/png;base64," + base64.b64encode(PNG + b"!").decode()
    refs = [
        cdn.url(f"/sized/{len(PNG)}"),
        cdn.url(f"/sized/{len(PNG) + 1}"),
        cdn.url(f"/chunked/{len(PNG) + 1}"),
        big_data_url,
        PNG_DATA_URL,
    ]
    files = await export("".join(f'<img src="{r}">' for r in refs), policy=policy)
    assert sorted(files) == ["assets/image-1.png", "assets/image-2.png", "index.html"]
    assert files["assets/image-1.png"] == b"x" * len(PNG)
    assert files["assets/image-2.png"] == PNG
    page = files["index.html"].decode()
    assert all(r in page for r in refs[1:4])


async def test_at_most_max_assets_are_bundled() -> None:
    urls = [
        "data:image/png;base64," + base64.b64encode(PNG + bytes([i])).decode() for i in range(3)
    ]
    code = "".join(f'<img src="{u}">' for u in urls)
    files = await export(code, policy=ExportPolicy(max_assets=2))
    assert sorted(files) == ["assets/image-1.png", "assets/image-2.png", "index.html"]
    assert files["index.html"].decode().endswith(f'<img src="{urls[2]}">')


async def test_the_total_size_is_bounded() -> None:
    urls = [
        "data:image/png;base64," + base64.b64encode(PNG + bytes([i])).decode() for i in range(3)
    ]
    code = "".join(f'<img src="{u}">' for u in urls)
    files = await export(code, policy=ExportPolicy(max_total_bytes=2 * len(PNG) + 2))
    assert sorted(files) == ["assets/image-1.png", "assets/image-2.png", "index.html"]


async def test_non_images_are_not_bundled(cdn: Cdn) -> None:
    page, bucket = cdn.url("/page.html"), cdn.url("/bucket/photo.jpg")
    files = await export(f'<img src="{page}"><img src="{bucket}">', policy=LENIENT)
    # An octet-stream whose name says image is one; an HTML page is not.
    assert sorted(files) == ["assets/image-1.jpg", "index.html"]
    assert files["index.html"].decode() == f'<img src="{page}"><img src="assets/image-1.jpg">'
    assert cdn.hits["/page.html"] == 1


async def test_relative_urls_resolve_against_the_base_url(cdn: Cdn) -> None:
    files = await export(
        '<img src="img/logo.png">', f"http://cdn.test:{cdn.port}/site/", policy=LENIENT
    )
    assert files["index.html"] == b'<img src="assets/image-1.png">'
    assert cdn.hits["/site/img/logo.png"] == 1


async def test_relative_urls_without_a_base_url_are_left_alone(cdn: Cdn) -> None:
    files = await export('<img src="img/logo.png">', policy=LENIENT)
    assert files == {"index.html": b'<img src="img/logo.png">'}


async def test_the_deadline_keeps_what_arrived_in_time(cdn: Cdn) -> None:
    slow, fast = cdn.url("/slow.png"), cdn.url("/fast.png")
    policy = replace(LENIENT, timeout_s=0.5)
    files = await export(f'<img src="{slow}"><img src="{fast}">', policy=policy)
    assert files["index.html"].decode() == f'<img src="{slow}"><img src="assets/image-1.png">'
    assert cdn.hits["/slow.png"] == 1


@pytest.mark.parametrize(
    ("reference", "kind", "value"),
    [
        ("data:image/png;base64,AA==", "data", "data:image/png;base64,AA=="),
        ("http://127.0.0.1:7001/local-assets/asset_1.png", "local", "asset_1.png"),
        ("http://[::1]:7001/local-assets/a.webp", "local", "a.webp"),
        ("https://s2c.example.com/local-assets/a.png", "local", "a.png"),
        ("//cdn.example.com/a.png", "remote", "https://cdn.example.com/a.png"),
        ("https://cdn.example.com/a.png#frag", "remote", "https://cdn.example.com/a.png"),
    ],
)
def test_classify(reference: str, kind: str, value: str) -> None:
    source = classify(reference, None, frozenset({"s2c.example.com"}))
    assert source is not None
    assert (source.kind, source.value) == (kind, value)


@pytest.mark.parametrize(
    "reference",
    [
        "",
        "#top",
        "data:text/html,<b>x</b>",
        "javascript:alert(1)",
        "ftp://example.com/a.png",
        "relative.png",
        "http://localhost/local-assets/../secret.png",
        "http://localhost/local-assets/sub/dir.png",
        "http://localhost/local-assets/%2e%2e%2fsecret.png",
        "http://[::1/a.png",
    ],
)
def test_classify_refuses(reference: str) -> None:
    assert classify(reference, None, frozenset()) is None


@given(st.text(alphabet=st.sampled_from(list("<>\"'=/ abimgsrcsetylpuh():;,.#&-\n")), max_size=200))
def test_a_visitor_that_changes_nothing_leaves_the_page_unchanged(page: str) -> None:
    assert rewrite_references(page, lambda reference: None) == page


# --- The linear scan finds exactly what the old backtracking regexes found ---

# The grammar export used to run as regexes (quadratic or worse on unclosed input), kept
# here as the reference the linear scanner is checked against on small pages.
_OLD_MARKUP = re.compile(
    r"<!--.*?-->"
    r"|(?P<raw_open><(?P<raw_name>script|style)\b(?:\"[^\"]*\"|'[^']*'|[^'\">])*+>)"
    r"(?P<raw_body>.*?)(?=</(?P=raw_name)\s*>)"
    r"|(?P<tag><(?P<tag_name>[a-zA-Z][^\s/>]*)(?:\"[^\"]*\"|'[^']*'|[^'\">])*+>)",
    re.IGNORECASE | re.DOTALL,
)
_STYLE = re.compile("style", re.IGNORECASE)
_OLD_CSS_URL = re.compile(r"""url\(\s*(?P<quote>["']?)(?P<url>[^"'()]*?)(?P=quote)\s*\)""", re.I)


def _old_tokens(code: str) -> list[tuple[str, str, str]]:
    """(kind, name, text) per match of the old grammar; CSS bodies as their url() list."""
    found: list[tuple[str, str, str]] = []
    for match in _OLD_MARKUP.finditer(code):
        if match.group("raw_body") is not None:
            name, body = match.group("raw_name").lower(), match.group("raw_body")
            found.append(("raw", name, match.group("raw_open") + body))
        elif match.group("tag") is not None:
            found.append(("tag", match.group("tag_name").lower(), match.group("tag")))
    return found


def _tokens(code: str) -> list[tuple[str, str, str]]:
    from services.common.markup import RawText, scan_markup

    return [
        ("raw", t.name, code[t.start : t.end])
        if isinstance(t, RawText)
        else ("tag", t.name.lower(), code[t.start : t.end])
        for t in scan_markup(code)
    ]


_PIECES = [
    *"<>\"'=/ \t\nabimgsrcsetylpuh():;,.#&-!",
    *("<!--", "-->", "<script>", "</script>", "<style>", "</style >", "url(", "<img src="),
    *("style=", "<SCRIPT ", "ſ", "K", "http://x.png", " 2x,", "<link rel=icon href="),
    *("<image href=", "&quot;", "<div>", '<a x="', "<mystyle ", "İ"),
]


@given(st.lists(st.sampled_from(_PIECES), max_size=60).map("".join))
def test_the_scan_finds_what_the_old_regex_found(page: str) -> None:
    # The scan passes over tags that cannot hold a reference without reporting them.
    def can_hold_a_reference(token: tuple[str, str, str]) -> bool:
        kind, name, text = token
        interesting = name in ("img", "source", "image", "link") or _STYLE.search(
            text, 1 + len(name)
        )
        return kind == "raw" or bool(interesting)

    assert list(filter(can_hold_a_reference, _tokens(page))) == list(
        filter(can_hold_a_reference, _old_tokens(page))
    )


@given(st.lists(st.sampled_from([*" \t\n\"'()xy/", "url(", "URL("]), max_size=40).map("".join))
def test_css_urls_are_the_old_regex_urls(css: str) -> None:
    seen: list[str] = []
    rewrite_references(f"<style>{css}</style>", lambda url: seen.append(url))
    assert seen == [m.group("url") for m in _OLD_CSS_URL.finditer(css)]


@pytest.mark.parametrize(
    "page",
    [
        '<a x="' * 170_000,  # the request, 1 MB
        '<a x="' * 170_000 + ">",
        "<a " * 340_000,
        "<!--" * 250_000,
        "<script>" * 125_000,
        "<div>" * 200_000 + "</div>" * 200_000,
        '<a"' * 340_000 + ">",
    ],
)
def test_adversarial_pages_come_back_unchanged(page: str) -> None:
    # Correctness only: the bench (bench/export_scan.py) measures the time.
    assert rewrite_references(page, lambda reference: None) == page


def test_a_url_after_a_long_run_of_spaces_is_found() -> None:
    seen: list[str] = []
    page = "<style>a { background: url(" + " " * 200_000 + "x.png   ) }</style>"
    rewrite_references(page, lambda url: seen.append(url))
    assert seen == ["x.png"]


def test_the_transform_stops_when_its_cpu_budget_is_spent() -> None:
    spent = CpuBudget(0.0)
    spent.spend(1.0)
    with pytest.raises(ExportTooComplex):
        rewrite_references("<img src=x>" * 10, lambda r: None, budget=spent)


async def test_an_export_over_its_time_budget_raises() -> None:
    with pytest.raises(ExportTooComplex):
        await build_export("<img src=x>", policy=ExportPolicy(transform_timeout_s=0.0))


async def test_an_export_that_gets_no_cpu_slot_in_time_is_busy() -> None:
    taken = asyncio.Semaphore(0)
    policy = ExportPolicy(transform_timeout_s=0.01)
    with pytest.raises(ExportBusy):
        await build_export("<div>x</div>", policy=policy, cpu_slots=taken)


async def test_an_export_with_a_free_slot_gives_it_back() -> None:
    slots = asyncio.Semaphore(1)
    files = await export_with_slots(f'<img src="{PNG_DATA_URL}">', slots)
    assert files["index.html"] == b'<img src="assets/image-1.png">'
    assert not slots.locked()


async def export_with_slots(code: str, slots: asyncio.Semaphore) -> dict[str, bytes]:
    return unzip(await build_export(code, cpu_slots=slots))
