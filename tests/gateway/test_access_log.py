"""The access log: the gateway token never reaches it, however the URL spells it."""

from __future__ import annotations

import io
import logging
from urllib.parse import quote

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from services.common.logs import REDACTED, JsonFormatter, TextFormatter
from services.gateway.access_log import AccessLogger, redact_url

TOKEN = "rt-0123456789abcdef"
ENCODED = "".join(f"%{b:02x}" for b in TOKEN.encode())  # every byte percent-encoded


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"/?token={TOKEN}", f"/?token={REDACTED}"),
        (f"/?token={ENCODED}", f"/?token={REDACTED}"),
        (f"/generate-code?tok%65n={TOKEN}", f"/generate-code?tok%65n={REDACTED}"),
        (f"/?%2574oken={TOKEN}", f"/?%2574oken={REDACTED}"),  # encoded twice
        (f"/?TOKEN={TOKEN}&a=1", f"/?TOKEN={REDACTED}&a=1"),
        (f"/?token=x&token={ENCODED}#top", f"/?token={REDACTED}&token={REDACTED}#top"),
        (f"/?+token+={TOKEN}", f"/?+token+={REDACTED}"),
        ("/?tokens=1&mytoken=2", "/?tokens=1&mytoken=2"),
        ("/static/app.js", "/static/app.js"),
    ],
)
def test_token_parameters_are_redacted_by_name(url: str, expected: str) -> None:
    assert redact_url(url) == expected


@pytest.mark.parametrize("formatter", [TextFormatter, JsonFormatter])
def test_an_access_record_holds_no_spelling_of_the_token(
    formatter: type[TextFormatter] | type[JsonFormatter],
) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    # The formatter also scrubs the literal token, as the gateway configures it.
    handler.setFormatter(formatter("gateway", [TOKEN]))
    logger = logging.getLogger("test.access")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    referer = f"http://gw/?token={quote(TOKEN)}&tok%65n={ENCODED}"
    request = make_mocked_request(
        "GET", f"/generate-code?tok%65n={ENCODED}&token={TOKEN}", headers={"Referer": referer}
    )
    try:
        AccessLogger(logger, "").log(request, web.Response(status=101), 0.25)
    finally:
        logger.removeHandler(handler)

    line = stream.getvalue()
    assert "GET /generate-code?tok%65n=" in line
    for spelling in (TOKEN, ENCODED, ENCODED.upper(), quote(TOKEN), "rt-0123"):
        assert spelling not in line
