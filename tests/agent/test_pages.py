"""What a create's tagged images ask for (pages.py): pages, their files and widths."""

from __future__ import annotations

from services.agent.domain import FileState, ImageMeta
from services.agent.pages import entry_file, meta_violations, page_plan, project_violations


def test_untagged_images_are_the_entry_page() -> None:
    plan = page_plan(2, ())
    assert [(p.path, p.images, p.widths) for p in plan.pages] == [("index.html", (0, 1), ())]
    assert not plan.multi_page
    assert plan.widths == ()


def test_widths_of_one_page_in_image_order_without_repeats() -> None:
    metas = [ImageMeta(1280), ImageMeta(390), ImageMeta(1280, "index")]
    plan = page_plan(4, metas)
    assert [(p.path, p.images) for p in plan.pages] == [("index.html", (0, 1, 2, 3))]
    assert plan.widths == (1280, 390)


def test_pages_entry_is_index_else_the_first_named() -> None:
    site = page_plan(3, [ImageMeta(page="about"), ImageMeta(page="index"), ImageMeta(page="faq")])
    assert [(p.name, p.path, p.images) for p in site.pages] == [
        ("index", "index.html", (1,)),
        ("about", "about.html", (0,)),
        ("faq", "faq.html", (2,)),
    ]
    # No `index`: the first page named is index.html; an untagged image belongs to it.
    other = page_plan(3, [ImageMeta(), ImageMeta(page="home"), ImageMeta(page="pricing")])
    assert [(p.name, p.path, p.images) for p in other.pages] == [
        ("home", "index.html", (0, 1)),
        ("pricing", "pricing.html", (2,)),
    ]


def test_entry_file_is_index_else_the_first_page() -> None:
    css, about, index = (
        FileState("s.css", ""),
        FileState("about.html", ""),
        FileState("index.html", ""),
    )
    assert entry_file([css, about, index]) == index
    assert entry_file([css, about]) == about
    assert entry_file([css]) == css
    assert entry_file([]) is None


def test_an_updates_project_is_held_to_its_paths_and_total_size() -> None:
    files = [
        FileState("index.html", "ab"),
        FileState("index.html", "cd"),
        FileState("../x.html", "é"),
    ]
    assert [(v.field, v.description) for v in project_violations(files, 5)] == [
        ("files[1].path", "index.html is given twice"),
        ("files[2].path", "not a project path: .. segments are not allowed"),
        # The paths count: 10 + 2, 10 + 2, 9 + 2 (é is two bytes).
        ("files", "35 bytes together, paths included; at most 5 (S2C_MAX_PROJECT_BYTES)"),
    ]
    assert project_violations(files[:1], 0) == []


def test_an_updates_project_refuses_look_alike_device_and_case_twin_paths() -> None:
    paths = ["index.html", "Index.html", "\uff0e\uff0e/x.html", "PRN.css", "INDEX.HTML"]
    found = project_violations([FileState(p, "") for p in paths], 0)
    assert [v.field for v in found] == [f"files[{i}].path" for i in range(1, 5)]
    starts = [
        "it differs from index.html, a file of the project, only in case",
        "U+FF0E is not allowed: a path is ASCII letters",
        "PRN is a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9)",
        "it differs from index.html, a file of the project, only in case",
    ]
    for violation, start in zip(found, starts, strict=True):
        assert violation.description.startswith(f"not a project path: {start}")


def test_page_tags_may_not_name_a_device_or_a_case_twin() -> None:
    metas = [ImageMeta(page="index"), ImageMeta(page="INDEX"), ImageMeta(page="con")]
    assert [(v.field, v.description) for v in meta_violations(3, metas, 0)] == [
        ("prompt.image_meta[1].page", "differs from index only in case"),
        (
            "prompt.image_meta[2].page",
            "con is a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9)",
        ),
    ]


def test_an_updates_project_is_held_to_its_file_count_before_anything_else() -> None:
    files = [FileState(f"../{i}", "") for i in range(4)]
    assert [(v.field, v.description) for v in project_violations(files, 5, 3)] == [
        ("files", "more than 3 files; a project holds at most 3 (S2C_MAX_PROJECT_FILES)")
    ]
    # At the bound, each path is looked at.
    assert [v.field for v in project_violations(files[:3], 0, 3)] == [
        "files[0].path",
        "files[1].path",
        "files[2].path",
    ]
