from __future__ import annotations

import pytest

from services.common.babel_cdn import PINNED_BABEL_URL, normalize_babel_cdn


def _script(src: str) -> str:
    return f'<script src="{src}"></script>'


@pytest.mark.parametrize(
    "url",
    [
        "https://unpkg.com/@babel/standalone/babel.min.js",
        "https://unpkg.com/@babel/standalone/babel.js",
        "https://unpkg.com/@babel/standalone@8.0.0/babel.min.js",
        "https://unpkg.com/@babel/standalone@7/babel.js",
        "https://unpkg.com/@babel/standalone@latest/babel.min.js",
        "https://cdn.jsdelivr.net/npm/@babel/standalone/babel.min.js",
        "https://cdn.jsdelivr.net/npm/@babel/standalone@7.23.2/babel.js",
        "http://unpkg.com/@babel/standalone/babel.min.js",
        "//unpkg.com/@babel/standalone/babel.min.js",
    ],
)
def test_babel_urls_are_pinned(url: str) -> None:
    html = f"<head>{_script(url)}</head>"
    assert normalize_babel_cdn(html) == f"<head>{_script(PINNED_BABEL_URL)}</head>"


def test_every_occurrence_is_rewritten_and_surroundings_kept() -> None:
    html = (
        "<script src='https://unpkg.com/@babel/standalone/babel.min.js'></script>\n"
        '<script type="text/babel">const a = <div/>;</script>\n'
        "<script src=https://cdn.jsdelivr.net/npm/@babel/standalone@8.1.0/babel.js></script>"
    )
    out = normalize_babel_cdn(html)
    assert out.count(PINNED_BABEL_URL) == 2
    assert "<script src='" + PINNED_BABEL_URL + "'></script>" in out
    assert "<script src=" + PINNED_BABEL_URL + "></script>" in out
    assert '<script type="text/babel">const a = <div/>;</script>' in out


@pytest.mark.parametrize(
    "html",
    [
        _script("https://cdnjs.cloudflare.com/ajax/libs/babel-standalone/7.25.6/babel.min.js"),
        _script("https://cdn.babeljs.io/babel-standalone/babel.min.js"),
        _script("https://example.com/@babel/standalone/babel.min.js"),
        _script("https://unpkg.com/@babel/core/babel.min.js"),
        _script("https://unpkg.com/@babel/standalone/babel.min.js.map"),
        _script("https://unpkg.com/react@18.0.0/umd/react.development.js"),
        "<p>no scripts at all</p>",
    ],
)
def test_other_urls_are_untouched(html: str) -> None:
    assert normalize_babel_cdn(html) == html


def test_idempotent() -> None:
    html = _script("https://unpkg.com/@babel/standalone/babel.js") + _script(PINNED_BABEL_URL)
    once = normalize_babel_cdn(html)
    assert normalize_babel_cdn(once) == once
    assert once == _script(PINNED_BABEL_URL) * 2
