"""A project of several files at the gateway: the entry page stays the code every client
knows (setCode / appendCode), the other files come as `setFile` frames; an export of
`files` zips them at the zip's root, sharing one assets folder."""

from __future__ import annotations

import io
import zipfile

import pytest
from s2c.agent.v1 import agent_service_pb2 as pb

from services.gateway.export import build_export
from services.gateway.frames import Frame, FrameBuilder
from services.gateway.preview_policy import PreviewPolicyConfig
from tests.gateway.test_frames import Clock, event
from tests.suite import png_data_url


def delta(offset: int, text: str, path: str = "") -> pb.GenerationEvent:
    return event(0, "c", code_delta=pb.CodeDelta(offset=offset, text=text, path=path))


def snapshot(path: str, content: str) -> pb.GenerationEvent:
    return event(0, "c", code_snapshot=pb.CodeSnapshot(path=path, content=content))


def run(events: list[pb.GenerationEvent], *, append: bool = False) -> list[Frame]:
    b = FrameBuilder(PreviewPolicyConfig(), Clock(), append=append)
    frames = [f for e in events for f in b.on_event(e)]
    return frames + b.flush_all()


SITE = [
    delta(0, "<html>home"),
    delta(10, "</html>"),
    snapshot("index.html", "<html>home</html>"),
    delta(0, "<html>pri", "pricing.html"),
    delta(9, "cing</html>", "pricing.html"),
    snapshot("pricing.html", "<html>pricing</html>"),
]


@pytest.mark.parametrize("append", [False, True])
def test_other_files_are_set_files_and_never_touch_the_entry_page(append: bool) -> None:
    frames = run(SITE, append=append)
    code = [f for f in frames if f["type"] in ("setCode", "appendCode")]
    assert "".join(f["value"] for f in code).endswith("<html>home</html>")
    assert all("pricing" not in f["value"] for f in code)
    files = [(f["path"], f["value"]) for f in frames if f["type"] == "setFile"]
    assert files == [("pricing.html", "<html>pricing</html>")]


def test_a_lone_file_not_named_index_is_the_entry_page() -> None:
    # A one-file create at about.html: the upstream UI still gets it as its code.
    frames = run([delta(0, "<p>a</p>", "about.html"), snapshot("about.html", "<p>about</p>")])
    assert [f["type"] for f in frames] == ["setCode", "setCode"]
    assert frames[-1]["value"] == "<p>about</p>"


def test_a_stylesheet_written_first_is_never_the_entry_page() -> None:
    frames = run([snapshot("site.css", "p {}"), snapshot("about.html", "<p>about</p>")])
    assert [(f["type"], f.get("path"), f["value"]) for f in frames] == [
        ("setFile", "site.css", "p {}"),
        ("setCode", None, "<p>about</p>"),
    ]


def test_index_written_after_another_page_takes_the_entry_place() -> None:
    frames = run(
        [snapshot("pricing.html", "<p>pricing</p>"), snapshot("index.html", "<p>home</p>")]
    )
    assert [(f["type"], f.get("path"), f["value"]) for f in frames] == [
        ("setCode", None, "<p>pricing</p>"),
        ("setFile", "pricing.html", "<p>pricing</p>"),
        ("setCode", None, "<p>home</p>"),
    ]


async def test_an_export_of_files_holds_each_at_the_root_with_shared_assets() -> None:
    pixel = png_data_url(1, 1)
    files = {
        "index.html": f'<html><body><img src="{pixel}"><a href="pricing.html">P</a></body></html>',
        "pages/pricing.html": f'<html><body><img src="{pixel}"></body></html>',
        "site.css": f"body {{ background: url('{pixel}') }}",
        "app.js": f"const logo = '{pixel}';",
    }
    archive = zipfile.ZipFile(io.BytesIO(await build_export(files)))
    assert sorted(archive.namelist()) == [
        "app.js",
        "assets/image-1.png",
        "index.html",
        "pages/pricing.html",
        "site.css",
    ]
    assert '<img src="assets/image-1.png">' in archive.read("index.html").decode()
    assert '<img src="../assets/image-1.png">' in archive.read("pages/pricing.html").decode()
    assert "url('assets/image-1.png')" in archive.read("site.css").decode()
    # A script is taken as it is: its strings are not references the export can judge.
    assert archive.read("app.js").decode() == files["app.js"]
