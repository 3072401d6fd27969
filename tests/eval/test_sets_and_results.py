"""Reference sets, the resumable results file and the report (no browser, no agent)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from services.eval.report import PNG_NOTE, render_report
from services.eval.results import ItemResult, Results, ResultsError, slug
from services.eval.sets import BUILTIN_SETS, SetError, load_set


def test_the_shipped_set_is_varied_offline_and_declares_viewports() -> None:
    shipped = load_set("basic")
    assert 12 <= len(shipped.items) <= 20
    assert len({ref.kind for ref in shipped.items}) >= 10
    assert any(ref.viewport.width < 500 for ref in shipped.items)  # mobile-first pages
    assert [ref.id for ref in shipped.items if not ref.is_html] == ["poster"]
    for ref in shipped.items:
        if ref.is_html:
            html = ref.path.read_text(encoding="utf-8")
            assert not re.search(r"(?:https?:)?//[a-z]", html, re.I), f"{ref.id} links out"


def test_the_shipped_sets_are_data_beside_the_package_not_in_it() -> None:
    services = Path(__file__).resolve().parents[2] / "services"
    shipped = load_set("basic")
    assert shipped.root == BUILTIN_SETS / "basic"
    assert BUILTIN_SETS.parent == services.parent
    assert not list((services / "eval").rglob("*.html")), "reference pages belong in evalsets/"


def write_manifest(root: Path, items: object) -> None:
    (root / "manifest.json").write_text(json.dumps({"name": "t", "items": items}))


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ("nope", "`items` must be a list"),
        ([{"file": "missing.html"}], "items[0].file 'missing.html' does not exist"),
        ([{"file": "../outside.html"}], "is outside the set directory"),
        ([{"file": "a.html", "viewport": {"width": 0, "height": 10}}], "viewport.width must be"),
        ([{"file": "a.html", "id": "no spaces"}], "items[0].id must be"),
        ([{"file": "a.html"}, {"file": "a.html"}], "duplicate item id(s): a"),
    ],
)
def test_a_bad_manifest_is_refused_with_the_field_and_why(
    tmp_path: Path, items: object, message: str
) -> None:
    (tmp_path / "a.html").write_text("<p>a</p>")
    write_manifest(tmp_path, items)
    with pytest.raises(SetError, match=re.escape(message)):
        load_set(str(tmp_path))


def test_a_directory_without_manifest_takes_every_page_and_lone_png(tmp_path: Path) -> None:
    for name in ("a.html", "a.png", "b.png"):
        (tmp_path / name).write_bytes(b"x")
    loaded = load_set(str(tmp_path))
    assert [(r.id, r.is_html) for r in loaded.items] == [("a", True), ("b", False)]
    with pytest.raises(SetError, match="no such set directory"):
        load_set(str(tmp_path / "nothing"))


def make_results(tmp_path: Path) -> Results:
    results = Results(tmp_path / "results.json", set_name="t", stack="html_css")
    results.models = ["demo", "m/2"]
    results.items = [
        {"id": "page", "html": True, "kind": "landing", "reference": "refs/page.png"},
        {"id": "shot", "html": False, "kind": "", "reference": "refs/shot.png"},
    ]
    scores: dict[str, float | None] = {"block_match": 0.5, "text": 1.0, "position": 0.8}
    scores |= {"color": 0.6, "visual": 0.4, "accessibility": 0.85}
    results.put("page", "demo", ItemResult("ok", scores=scores, digest="d1", cost_usd=0.5))
    png_scores = {**dict.fromkeys(scores), "visual": 0.2, "accessibility": 0.65}
    results.put("shot", "demo", ItemResult("ok", scores=png_scores, digest="d2"))
    results.put("page", "m/2", ItemResult("failed", error="<boom>", digest="d1"))
    return results


def test_finished_items_are_skipped_failed_or_changed_ones_redone(tmp_path: Path) -> None:
    make_results(tmp_path).save()
    resumed = Results.open(tmp_path / "results.json")
    assert resumed.done("page", "demo", "d1")
    assert not resumed.done("page", "demo", "changed")
    assert not resumed.done("page", "m/2", "d1")
    assert not resumed.done("shot", "m/2", "d2")
    assert not list(tmp_path.glob(".results.json.*"))  # no temporary file left behind


def test_the_summary_counts_failures_as_zero_and_png_items_only_for_visual(
    tmp_path: Path,
) -> None:
    demo, other = make_results(tmp_path).summary()
    assert demo.means == {
        "block_match": 0.5,
        "text": 1.0,
        "position": 0.8,
        "color": 0.6,
        "visual": pytest.approx(0.3),
        # axe-core's score applies to every item, a PNG reference's too.
        "accessibility": pytest.approx(0.75),
    }
    assert (demo.done, demo.failed, demo.cost_usd) == (2, 0, 0.5)
    assert (other.done, other.failed) == (0, 1)
    assert other.means["text"] == 0.0
    assert other.means["accessibility"] == 0.0


def test_an_unreadable_results_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text("{not json")
    with pytest.raises(ResultsError, match="cannot be resumed from"):
        Results.open(tmp_path / "results.json")


def test_the_report_escapes_and_says_which_items_have_only_visual(tmp_path: Path) -> None:
    html = render_report(make_results(tmp_path))
    assert "&lt;boom&gt;" in html
    assert "<boom>" not in html
    assert html.count(PNG_NOTE) == 1
    assert 'id="summary"' in html
    assert "pending" in html  # shot × m/2 has not run


def test_model_ids_become_distinct_file_names() -> None:
    assert slug("demo") == "demo"
    assert slug("a b") != slug("a/b")
    assert re.fullmatch(r"[A-Za-z0-9._-]+", slug("gpt-5.5 (high thinking)"))
