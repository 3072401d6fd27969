"""The file tools on a project of several files: edits by path, paths outside the project
refused to the model, the project's total size, and previews that inline the project's own
stylesheets and scripts."""

from __future__ import annotations

import pytest

from services.common.tool_types import FileState
from services.tools.file_tools import create_file, edit_file
from services.tools.preview_tool import page_to_render
from services.tools.types import ToolContext

INDEX = FileState(
    "index.html",
    '<html><head><link rel="stylesheet" href="site.css"></head><body><h1>Home</h1></body></html>',
)
PRICING = FileState("pricing.html", "<html><body><h1>Pricing</h1></body></html>")
CSS = FileState("site.css", "h1 { color: red }")
SITE = ToolContext(files=(INDEX, PRICING, CSS))


async def test_edit_file_changes_the_file_its_path_names() -> None:
    args = {"path": "pricing.html", "old_text": "Pricing", "new_text": "Plans"}
    outcome = await edit_file(args, INDEX, SITE)
    assert outcome.ok
    assert outcome.updated_file == FileState(
        "pricing.html", PRICING.content.replace("Pricing", "Plans")
    )
    assert outcome.summary["path"] == "pricing.html"
    # Without a path: the current file.
    current = await edit_file({"old_text": "Home", "new_text": "Start"}, INDEX, SITE)
    assert current.updated_file is not None
    assert current.updated_file.path == "index.html"


async def test_edit_file_names_a_missing_file_and_the_projects_files() -> None:
    outcome = await edit_file({"path": "faq.html", "old_text": "a", "new_text": "b"}, INDEX, SITE)
    assert not outcome.ok
    assert outcome.result["error"] == (
        "No file at faq.html; the project's files: index.html, pricing.html, site.css. "
        "Call create_file to add it."
    )


async def test_paths_outside_the_project_are_tool_errors() -> None:
    for path, why in (
        ("../secret.html", ".. segments are not allowed"),
        ("/etc/x.html", "absolute paths are not allowed"),
        ("run.php", "it must end in .html, .htm, .css or .js"),
    ):
        for tool, args in (
            (create_file, {"path": path, "content": "<p>x</p>"}),
            (edit_file, {"path": path, "old_text": "Home", "new_text": "x"}),
        ):
            outcome = await tool(args, INDEX, SITE)
            assert not outcome.ok, (tool, path)
            assert why in outcome.result["error"]
            assert outcome.updated_file is None


async def test_a_path_differing_from_a_projects_file_only_in_case_is_a_tool_error() -> None:
    for path, twin in (("Index.html", "index.html"), ("SITE.CSS", "site.css")):
        outcome = await create_file({"path": path, "content": "<p>x</p>"}, INDEX, SITE)
        assert not outcome.ok
        assert outcome.result["error"].endswith(
            f"({'it differs from ' + twin}, a file of the project, only in case)"
        )
        assert outcome.updated_file is None
    # A project of one file is the current file alone; the file itself may be rewritten.
    alone = await create_file({"path": "INDEX.html", "content": "x"}, INDEX, ToolContext())
    assert "differs from index.html" in alone.result["error"]
    again = await create_file({"path": "index.html", "content": "<p>y</p>"}, INDEX, SITE)
    assert again.ok


async def test_a_stylesheet_is_kept_as_written() -> None:
    raw = "```css\nh1 { color: blue }\n```"
    outcome = await create_file({"path": "site.css", "content": raw}, INDEX, SITE)
    assert outcome.updated_file == FileState("site.css", raw)


def size(*files: FileState) -> int:
    """What `files` count toward a project's bytes: their paths and contents."""
    return sum(len(f.path) + len(f.content) for f in files)


async def test_the_project_is_held_to_its_total_size() -> None:
    # site.css is the file replaced: its path counts, its old content does not.
    others = size(INDEX, PRICING) + len("site.css")
    limit = ToolContext(files=SITE.files, max_project_bytes=others + 10)
    fits = await create_file({"path": "site.css", "content": "x" * 10}, INDEX, limit)
    assert fits.ok
    over = await create_file({"path": "site.css", "content": "x" * 11}, INDEX, limit)
    assert over.summary == {"error": "Project too large"}
    assert over.result["limit_bytes"] == others + 10
    grown = await edit_file(
        {"path": "pricing.html", "old_text": "Pricing", "new_text": "P" * 50}, INDEX, limit
    )
    assert grown.summary == {"error": "Project too large"}


async def test_a_second_file_counts_the_first_against_the_limit() -> None:
    # A project of one file comes without `files`: the current file is the whole project.
    limit = ToolContext(max_project_bytes=size(INDEX) + len("pricing.html") + 10)
    over = await create_file({"path": "pricing.html", "content": "x" * 11}, INDEX, limit)
    assert over.summary == {"error": "Project too large"}
    fits = await create_file({"path": "pricing.html", "content": "x" * 10}, INDEX, limit)
    assert fits.ok


async def test_a_preview_renders_the_page_with_its_own_stylesheet_and_script() -> None:
    script = FileState("js/app.js", "document.title = '</script>'")
    page = FileState(
        "index.html", INDEX.content.replace("<body>", '<body><script src="js/app.js"></script>')
    )
    shown, html = await page_to_render(page, (page, PRICING, CSS, script))
    assert shown == page
    assert "<style>h1 { color: red }</style>" in html
    assert "<script>document.title = '<\\/script>'</script>" in html
    # A stylesheet is not a page: the entry page is rendered instead.
    shown, _ = await page_to_render(CSS, (PRICING, INDEX, CSS))
    assert shown == INDEX
    # A link to a file the project lacks is left as it is.
    _, lone = await page_to_render(INDEX, ())
    assert '<link rel="stylesheet" href="site.css">' in lone


@pytest.mark.timeout(60)
async def test_a_page_of_unclosed_tags_is_inlined_in_one_scan() -> None:
    # Issue 35: 15 KB of `<link rel=stylesheet ` held a worker's loop for 50 s (the
    # regexes backtracked cubically); these 100 KB would have taken days. No timed
    # assertion: before the fix this never ends, which the timeout catches.
    script = FileState("js/app.js", "run()")
    hostile = "<link rel=stylesheet " * 2900 + '<script src="js/app.js" ' * 2000
    real = '<link rel="stylesheet" href="site.css"><script defer src="js/app.js"></script>'
    page = FileState("index.html", real + hostile)

    _, html = await page_to_render(page, (page, CSS, script))

    # The fragments never close, so (as in a browser) none of them is a tag.
    assert html == "<style>h1 { color: red }</style><script defer>run()</script>" + hostile


async def test_links_are_read_as_a_browser_reads_them() -> None:
    # Any attribute order, rel as a token list, references resolved from the page's folder
    # and unescaped; comments, other hosts and scripts with a body are left alone.
    css = FileState("css/site.css", "p {}")
    page = FileState(
        "pages/about.html",
        '<LINK HREF="../css/site.css?v=2" REL="alternate stylesheet">'
        "<!-- <link rel=stylesheet href=../css/site.css> -->"
        '<link rel="stylesheet" href="https://cdn.test/css/site.css">'
        '<link rel=icon href="../css/site.css"><link rel=stylesheet href="http://[x">'
        '<script src="../js/a&#46;js" type="module"></script >'
        '<script src="../js/a.js">inline()</script>',
    )
    _, html = await page_to_render(page, (page, css, FileState("js/a.js", "x = '</SCRIPT>'")))
    assert html == (
        "<style>p {}</style>"
        "<!-- <link rel=stylesheet href=../css/site.css> -->"
        '<link rel="stylesheet" href="https://cdn.test/css/site.css">'
        '<link rel=icon href="../css/site.css"><link rel=stylesheet href="http://[x">'
        "<script type=\"module\">x = '<\\/SCRIPT>'</script>"
        '<script src="../js/a.js">inline()</script>'
    )


async def test_a_tag_name_that_case_folds_to_script_is_read_as_the_scan_reads_it() -> None:
    # `<ſcript` (a long s) matches `script` case-insensitively; the scanner looked its
    # closing tag up by the name as written and raised KeyError.
    page = FileState("index.html", '<ſcript src="b.js"></ſcript><ſtyle>x</style>')
    _, html = await page_to_render(page, (page, FileState("b.js", "run()")))
    assert html == "<script>run()</script><ſtyle>x</style>"
