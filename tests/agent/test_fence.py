"""The text-mode page scanner: the first ```html block, however the stream cuts it."""

from __future__ import annotations

import pytest

from services.agent.fence import FenceScanner, Piece

PAGE = "<!DOCTYPE html>\n<html><body><h1>Hi</h1>\n<p>`code` and ``more``</p></body></html>"
ANSWER = f"Here is the page:\n\n```html\n{PAGE}\n```\n\nIt has a heading."


def scan(deltas: list[str]) -> tuple[str, str]:
    scanner = FenceScanner()
    pieces: list[Piece] = []
    for delta in deltas:
        pieces += scanner.feed(delta)
    pieces += scanner.end()
    page = "".join(p.text for p in pieces if p.page)
    assert scanner.page_length == len(page)
    return page, "".join(p.text for p in pieces if not p.page)


def cuts(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 2, 3, 4, 7, 1000])
def test_the_page_is_the_fenced_block_whatever_the_cuts(size: int) -> None:
    page, prose = scan(cuts(ANSWER, size))
    assert page == PAGE
    assert prose == "Here is the page:\n\n\n\nIt has a heading."


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_a_missing_closing_fence_ends_the_page_with_the_answer(size: int) -> None:
    for tail in ("", "\n", "\n`", "\n``"):
        page, prose = scan(cuts(f"Sure.\n```html\n{PAGE}{tail}", size))
        assert (page, prose) == (PAGE, "Sure.\n")


def test_a_block_in_another_language_stays_prose_and_the_html_one_is_the_page() -> None:
    answer = f"Run:\n```bash\nnpx serve\n```\nThen:\n```\n{PAGE}\n```\n```html\nnot this\n```"
    page, prose = scan(cuts(answer, 5))
    assert page == PAGE
    assert prose == "Run:\n```bash\nnpx serve\n```\nThen:\n\n```html\nnot this\n```"


def test_an_answer_without_a_fence_is_all_prose() -> None:
    assert scan(cuts("No page, only ``words`` here`", 2)) == ("", "No page, only ``words`` here`")


@pytest.mark.parametrize("size", [1, 2, 3, 5, 1000])
def test_backticks_inside_a_line_of_the_page_are_the_pages(size: int) -> None:
    page = "<script>\nconst md = '```js\\nx\\n```';\n</script>\n<p>``` not a fence</p>"
    assert scan(cuts(f"Page:\n```html\n{page}\n```\nDone.", size)) == (page, "Page:\n\nDone.")


@pytest.mark.parametrize("size", [1, 2, 1000])
def test_an_empty_block_closes_at_once(size: int) -> None:
    assert scan(cuts("A:\n```html\n```\nB", size)) == ("", "A:\n\nB")


def test_an_info_string_read_over_many_deltas_is_kept_whole() -> None:
    # Its pieces are joined once, at its newline or the answer's end (linear in its length).
    info = "html " + "x" * 5000
    assert scan(["A ```", *info, "\nB\n```"]) == ("", f"A ```{info}\nB\n```")
    assert scan(["```", *" HTML ", "\n<p>"]) == ("<p>", "")
    assert scan(["```", *info]) == ("", f"```{info}")
