"""Pin Babel standalone to the version the prompts ask for before a page is rendered.

Models often write an unversioned (or differently versioned) `@babel/standalone` URL; the
unversioned one now resolves to Babel 8, which no longer transforms the JSX the React stack
relies on, so the preview would render blank. The frontend applies the same rewrite; the
tool worker applies it before a screenshot and the gateway before an export, so both show
what the user sees (hence `common`: two services need the one rule).
"""

from __future__ import annotations

import re

PINNED_BABEL_URL = "https://unpkg.com/@babel/standalone@7.25.6/babel.min.js"

# Only the two CDNs the prompts mention are rewritten: another host serving a file of the
# same name is not ours to second-guess. The lookahead stops `babel.js.map` and friends
# from being turned into a script URL.
_BABEL_URL = re.compile(
    r"""(?:https?:)?//(?:unpkg\.com|cdn\.jsdelivr\.net/npm)/@babel/standalone"""
    r"""(?:@[^/\s"'<>]*)?/babel(?:\.min)?\.js(?![\w.-])""",
    re.IGNORECASE,
)


def normalize_babel_cdn(html: str) -> str:
    """Rewrite every unpkg/jsdelivr Babel standalone URL to the pinned 7.25.6 build.

    Idempotent: the pinned URL matches the pattern and is rewritten to itself.
    """
    return _BABEL_URL.sub(PINNED_BABEL_URL, html)
