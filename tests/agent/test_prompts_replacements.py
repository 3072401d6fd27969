"""The replacements an update shows a later version as, and which version is the base."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from services.agent.prompts.versions import REBASE_SHARE, Shown, plan, replacements

PAGE = "".join(f"<p>row {i}</p>\n" for i in range(40))


def apply(text: str, edits: tuple[tuple[str, str], ...]) -> str:
    for old, new in edits:
        assert text.count(old) == 1
        text = text.replace(old, new, 1)
    return text


def test_a_changed_line_is_one_replacement_of_that_line() -> None:
    new = PAGE.replace("<p>row 7</p>", "<p>row seven</p>")
    assert replacements(PAGE, new) == (("<p>row 7</p>\n", "<p>row seven</p>\n"),)


def test_an_insertion_carries_a_line_of_context() -> None:
    new = PAGE.replace("<p>row 3</p>\n", "<p>row 3</p>\n<p>new</p>\n")
    edits = replacements(PAGE, new)
    assert edits is not None
    assert edits[0][0] in ("<p>row 3</p>\n", "<p>row 3</p>\n<p>row 4</p>\n")
    assert apply(PAGE, edits) == new


def test_repeated_lines_widen_until_unique() -> None:
    old = "<ul>\n<li>x</li>\n<li>x</li>\n<li>x</li>\n</ul>\n<footer>f</footer>\n"
    new = old.replace("<li>x</li>\n</ul>", "<li>y</li>\n</ul>")
    edits = replacements(old, new)
    assert edits is not None
    assert all(old.count(o) == 1 for o, _ in edits)
    assert apply(old, edits) == new


def test_nothing_to_replace_is_none() -> None:
    assert replacements(PAGE, PAGE) is None


def test_a_file_of_one_repeated_line_widens_to_all_of_it() -> None:
    edits = replacements("same\nsame\n", "same\nsame\nsame\n")
    assert edits == (("same\nsame\n", "same\nsame\nsame\n"),)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 39), st.sampled_from(["", "<p>x</p>\n", "<p>row 1</p>\n"])),
        min_size=1,
        max_size=6,
    )
)
def test_replacements_reproduce_the_new_version_exactly_or_are_none(
    changes: list[tuple[int, str]],
) -> None:
    lines = PAGE.splitlines(keepends=True)
    for index, text in changes:
        lines[index % len(lines)] = text
    new = "".join(lines)
    edits = replacements(PAGE, new)
    if edits is not None:
        assert apply(PAGE, edits) == new


def _versions(count: int) -> list[str]:
    page, out = PAGE, []
    for number in range(count):
        page = page.replace(f"<p>row {number}</p>", f"<p>row {number}, changed</p>")
        out.append(page)
    return out


def test_plan_keeps_one_base_and_rebases_when_the_edits_outgrow_a_quarter() -> None:
    versions = _versions(12)
    shown = plan(versions)
    kinds = [s.kind for s in shown]
    assert kinds.count("full") == 1
    base = kinds.index("full")
    assert base > 0
    assert set(kinds[:base]) == {"elided"}
    assert set(kinds[base + 1 :]) == {"edits"}
    size = sum(len(o) + len(n) for s in shown[base + 1 :] for o, n in s.edits)
    assert size <= REBASE_SHARE * len(versions[-1])
    text = versions[base]
    for s in shown[base + 1 :]:
        text = apply(text, s.edits)
    assert text == versions[-1]


def test_plan_of_a_history_starts_the_plan_of_the_next() -> None:
    versions = _versions(12)
    for count in range(1, 12):
        now, then = plan(versions[:count]), plan(versions[: count + 1])
        if then[count].kind != "full":  # no rebase: every earlier version shows the same
            assert then[:count] == now


def test_the_same_version_again_is_edits_of_nothing() -> None:
    assert plan([PAGE, PAGE]) == [Shown("full"), Shown("edits")]
