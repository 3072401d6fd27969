"""The vendored CDN copies: every URL the prompts name has a local answer, the map follows
each CDN's URL grammar, and a changed file or index is refused rather than served."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from services.agent.demo_pages import BOOTSTRAP
from services.agent.prompts.system import build_system_prompt
from services.common.react_project import IMPORTABLE, TOOLCHAIN
from services.common.vendor import (
    DEFAULT_VENDOR_DIR,
    FONT_PACKAGE_PREFIXES,
    INDEX_NAME,
    MANIFEST_NAME,
    PACKAGES,
    VendorCatalog,
    VendorError,
    check,
)
from services.common.vendor_fonts import BadFontsRequest, Face, parse_request
from services.common.vendor_route import browser_file_url


@pytest.fixture(scope="module")
def catalog() -> VendorCatalog:
    return VendorCatalog.load(DEFAULT_VENDOR_DIR)


def answer_rel(catalog: VendorCatalog, url: str) -> str | None:
    answer = catalog.answer(url, browser_file_url)
    return None if answer is None else (answer.rel or "generated")


def test_the_install_matches_the_committed_manifest() -> None:
    # What `make install` runs: every served file hashed against vendor/manifest.json.
    assert re.fullmatch(r"\d+ packages, \d+ files, \d+ bytes verified", check(DEFAULT_VENDOR_DIR))


def test_the_pins_are_exactly_the_packages_served() -> None:
    pins = json.loads((DEFAULT_VENDOR_DIR / "package.json").read_text())["dependencies"]
    served = {p.name for p in PACKAGES} | {n for n in pins if n.startswith(FONT_PACKAGE_PREFIXES)}
    # The react_vite build's own pins (docs/react.md); postcss comes with tailwindcss.
    built = {*IMPORTABLE, *TOOLCHAIN} - {"postcss"}
    assert set(pins) == served | built
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in pins.values()), "exact pins only"


def test_every_cdn_url_of_the_system_prompt_has_a_local_answer(catalog: VendorCatalog) -> None:
    urls = re.findall(r"https://[^\s\"'<>)]+", build_system_prompt())
    cdn = [u for u in urls if "placehold.co" not in u]
    assert len(cdn) >= 12
    missing = [u for u in cdn if answer_rel(catalog, u) is None]
    # Ionic 9 ships no `nomodule` build, on the CDN either; a browser that runs modules
    # never requests it (docs/offline.md).
    assert missing == ["https://cdn.jsdelivr.net/npm/@ionic/core/dist/ionic/ionic.js"]


def test_the_bootstrap_copy_passes_the_prompts_integrity_hash(catalog: VendorCatalog) -> None:
    [href] = re.findall(r'href="([^"]+)"', BOOTSTRAP)
    [sri] = re.findall(r'integrity="sha384-([^"]+)"', BOOTSTRAP)
    answer = catalog.answer(href, browser_file_url)
    assert answer is not None
    assert base64.b64encode(hashlib.sha384(answer.body).digest()).decode() == sri


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://cdn.tailwindcss.com", "tailwindcss-cdn/tailwindcss.js"),
        ("https://cdn.tailwindcss.com/", "tailwindcss-cdn/tailwindcss.js"),
        ("//cdn.tailwindcss.com", "tailwindcss-cdn/tailwindcss.js"),
        ("https://cdn.tailwindcss.com/3.4.1", "tailwindcss-cdn/3.4.1/tailwindcss.js"),
        ("https://cdn.tailwindcss.com/3.4.17", "tailwindcss-cdn/tailwindcss.js"),
        ("https://cdn.tailwindcss.com?plugins=forms", "tailwindcss-cdn/tailwindcss-with-forms.js"),
        (
            "https://cdn.tailwindcss.com?plugins=forms,typography,aspect-ratio,container-queries",
            "tailwindcss-cdn/tailwindcss-with-all-plugins.js",
        ),
        ("https://cdn.tailwindcss.com?plugins=forms,typography", None),  # no such build
        ("https://cdn.tailwindcss.com/2.2.19", None),
        ("https://unpkg.com/react@18/umd/react.development.js", "react/umd/react.development.js"),
        ("https://unpkg.com/react@17.0.2/umd/react.development.js", None),  # not our version
        ("https://cdn.jsdelivr.net/npm/vue@3.3.11", "vue/dist/vue.global.js"),  # its entry
        ("https://unpkg.com/@babel/standalone/babel.min.js", "@babel/standalone/babel.min.js"),
        (
            "https://cdn.jsdelivr.net/npm/ionicons/dist/esm/ionicons.min.js",  # minified on request
            "ionicons/dist/esm/ionicons.js",
        ),
        ("https://unpkg.com/ionicons/dist/esm/ionicons.min.js", None),  # unpkg does not minify
        ("https://cdn.jsdelivr.net/npm/lodash@4.17.21/lodash.min.js", None),
        ("https://cdn.jsdelivr.net/npm/react@18.0.0/../../etc/passwd", None),
        ("https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.5.0/css/all.min.css", None),
        ("https://cdn.jsdelivr.net/npm/ionicons/+esm", "generated"),
        ("https://fonts.googleapis.com/css2?family=Inter:wght@400;700&display=swap", "generated"),
        ("https://fonts.googleapis.com/css2?family=Comic+Neue", None),  # a family we lack
        ("https://example.com/react.development.js", None),
    ],
)
def test_cdn_url_grammar(catalog: VendorCatalog, url: str, expected: str | None) -> None:
    assert answer_rel(catalog, url) == expected


def test_google_fonts_stylesheets_name_local_files(catalog: VendorCatalog) -> None:
    url = "https://fonts.googleapis.com/css2?family=Inter:ital,wght@0,400;1,700&family=Poppins:wght@600&display=swap"
    answer = catalog.answer(url, lambda rel: f"/v/{rel}")
    assert answer is not None
    css = answer.body.decode()
    assert "font-family: 'Inter';" in css
    assert "font-family: 'Poppins';" in css
    assert "font-style: italic;\n  font-weight: 700;" in css
    assert "font-display: swap;" in css
    # Poppins is static: the 600 file of each subset; Inter one variable file per style.
    assert "url(/v/@fontsource/poppins/files/poppins-latin-600-normal.woff2)" in css
    assert "url(/v/@fontsource-variable/inter/files/inter-latin-wght-italic.woff2)" in css
    assert set(answer.needs) == set(re.findall(r"url\(/v/([^)]+)\)", css))
    # The older /css API and its variant spelling.
    old = catalog.answer("https://fonts.googleapis.com/css?family=Roboto:400,700italic|Lato", str)
    assert old is not None
    assert old.body.decode().count("font-family: 'Lato';") >= 1


def test_a_font_awesome_stylesheet_needs_its_fonts(catalog: VendorCatalog) -> None:
    url = "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/5.15.3/css/all.min.css"
    answer = catalog.answer(url, browser_file_url)
    assert answer is not None
    needs = catalog.dependencies(answer)
    assert "@fortawesome/fontawesome-free/webfonts/fa-solid-900.woff2" in needs


def test_a_changed_file_is_refused(catalog: VendorCatalog, tmp_path: Path) -> None:
    rel = "react/umd/react.development.js"
    (tmp_path / "react" / "umd").mkdir(parents=True)
    shutil.copy(catalog.root / rel, tmp_path / rel)
    copy = VendorCatalog(
        root=tmp_path, digest="x", versions=catalog.versions, entries=catalog.entries,
        hashes=catalog.hashes, units=catalog.units, fonts=catalog.fonts,
    )  # fmt: skip
    assert copy.read(rel).body.startswith(b"/**")
    with (tmp_path / rel).open("ab") as file:
        file.write(b"\nalert('changed');\n")
    with pytest.raises(VendorError, match="differs from its recorded hash"):
        copy.read(rel)


def test_an_index_that_disagrees_with_the_manifest_is_refused(tmp_path: Path) -> None:
    (tmp_path / "node_modules").mkdir()
    shutil.copy(DEFAULT_VENDOR_DIR / MANIFEST_NAME, tmp_path / MANIFEST_NAME)
    index = json.loads((DEFAULT_VENDOR_DIR / "node_modules" / INDEX_NAME).read_text())
    index["react/umd/react.development.js"] = "0" * 64
    (tmp_path / "node_modules" / INDEX_NAME).write_text(json.dumps(index))
    with pytest.raises(VendorError, match="react does not match"):
        VendorCatalog.load(tmp_path)
    del index["react/umd/react.development.js"]
    index["left-pad/index.js"] = "0" * 64
    (tmp_path / "node_modules" / INDEX_NAME).write_text(json.dumps(index))
    with pytest.raises(VendorError, match="outside"):
        VendorCatalog.load(tmp_path)
    with pytest.raises(VendorError, match="run make install"):
        VendorCatalog.load(tmp_path / "missing")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("family=Inter:wght@inf", "font weight 'inf' is not a whole number from 1 to 1000"),
        ("family=Inter:wght@1e999", "font weight '1e999' is not a whole number from 1 to 1000"),
        (f"family=Inter:wght@{'9' * 400}", f"font weight '{'9' * 40}…' is not a whole number"),
        ("family=Inter:wght@400.5", "font weight '400.5' is not a whole number"),
        ("family=Inter:wght@١٠٠", "font weight '١٠٠' is not a whole number"),  # Arabic digits
        ("family=Inter:wght@0", "font weight 0 is out of range: a whole number from 1 to 1000"),
        ("family=Inter:wght@1001", "font weight 1001 is out of range"),
        ("family=Inter:wght@100..inf", "font weight 'inf' is not a whole number"),
        ("family=Inter:wght@700..100", "the weight range 700..100 is empty"),
        ("family=Inter:ital,wght@2,400", "ital is 0 or 1, not '2'"),
        ("family=Inter:ital,wght@1", "'1' has 1 values for 2 axes ('ital,wght')"),
        ("family=Inter:wght", "axes without values"),
        ("family=Inter:wght@" + ";".join(["400"] * 101), "101 faces asked for; at most 100"),
        ("family=Inter&" * 101, "101 faces asked for; at most 100 in one request"),
    ],
)
def test_a_malformed_google_fonts_query_is_refused_saying_why(query: str, message: str) -> None:
    # Any page may ask for these: before issue 35, `wght@inf` raised OverflowError inside
    # the browser's route handler, failing another user's screenshot.
    with pytest.raises(BadFontsRequest) as refused:
        parse_request("/css2", query)
    assert message in str(refused.value)


def test_the_older_css_api_holds_its_weights_to_the_same_range() -> None:
    with pytest.raises(BadFontsRequest, match="font weight 0 is out of range"):
        parse_request("/css", "family=Roboto:000")
    with pytest.raises(BadFontsRequest, match="unknown variant 'heavy'"):
        parse_request("/css", "family=Roboto:heavy")
    parsed = parse_request("/css", "family=Roboto:400,700italic")
    assert parsed is not None
    assert parsed.families[0].faces == (Face("normal", 400), Face("italic", 700))
    ranged = parse_request("/css2", "family=Inter:ital,wght@0,100..900;1,1000")
    assert ranged is not None
    assert ranged.families[0].faces == (Face("normal", (100, 900)), Face("italic", 1000))
