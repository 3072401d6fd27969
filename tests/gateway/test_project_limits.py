"""A project's file count at the gateway, and the work it does on large projects kept off
the event loop and inside the export's budget (issue 35, item 7)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from services.gateway.bodies import (
    MAX_JSON_VALUES,
    PARSE_ON_LOOP_BYTES,
    TooManyValues,
    parse_json,
)
from services.gateway.export import Asset, _zip
from services.gateway.export_markup import CpuBudget, ExportTooComplex
from services.gateway.params import ParamsError, parse_params
from services.gateway.routes import add_routes
from services.gateway.settings import GatewaySettings
from tests.suite import update_params


def project(count: int) -> dict[str, str]:
    return {f"p{i}.html": "<p>x</p>" for i in range(count)}


def test_an_update_with_more_files_than_a_project_holds_is_refused_naming_the_bound() -> None:
    with pytest.raises(ParamsError) as refused:
        parse_params(update_params("<p>a</p>", files=project(4)), asset_base_url="", max_files=3)
    assert str(refused.value) == (
        "Invalid params: files: 4 files; a project holds at most 3 (S2C_MAX_PROJECT_FILES)"
    )
    request = parse_params(update_params("<p>a</p>", files=project(3)), asset_base_url="")
    assert len(request.files) == 3


def test_the_bound_is_a_setting_shared_with_the_agent() -> None:
    assert GatewaySettings().max_project_files == 64
    assert GatewaySettings.from_env({"S2C_MAX_PROJECT_FILES": "7"}).max_project_files == 7


async def test_an_export_of_more_files_than_a_project_holds_is_refused(tmp_path: Path) -> None:
    app = web.Application()
    add_routes(app, GatewaySettings(data_dir=tmp_path, max_project_files=3))
    async with TestClient(TestServer(app)) as client:
        refused = await client.post("/api/export", json={"files": project(4)})
        assert refused.status == 413
        assert await refused.json() == {
            "detail": "files: 4 files; a project holds at most 3 (S2C_MAX_PROJECT_FILES)"
        }
        assert (await client.post("/api/export", json={"files": project(3)})).status == 200


async def test_a_large_frame_is_parsed_while_the_loop_goes_on() -> None:
    # On the loop, the parse would finish in the task's first step: the ticker would
    # count once. In a thread, the ticker runs again while the task waits for it.
    files = {f"f{i}.js": "\ud800" + "x" * 1000 for i in range(PARSE_ON_LOOP_BYTES // 1000)}
    frame = json.dumps({"files": files})
    parsing = asyncio.create_task(parse_json(frame, clean=True))
    ticks = 0
    while not parsing.done():
        ticks += 1
        await asyncio.sleep(0)
    assert ticks > 1
    assert len(parsing.result()["files"]) == len(files)
    assert parsing.result()["files"]["f0.js"] == "\ufffd" + "x" * 1000  # cleaned there too
    assert await parse_json('{"a": "\\ud800"}', clean=True) == {"a": "\ufffd"}


async def test_a_large_text_of_more_values_than_any_frame_holds_is_refused_unparsed() -> None:
    # json.loads holds the GIL throughout: in a thread too, a million values stop the loop.
    values = "[" + "0," * MAX_JSON_VALUES + "0]" + " " * PARSE_ON_LOOP_BYTES
    with pytest.raises(TooManyValues) as refused:
        await parse_json(values)
    assert str(refused.value) == "the JSON holds more than 100000 values, the most it may"
    # Marks inside strings (escaped quotes and backslashes included) are text, not values.
    text = {"a\\": "," * MAX_JSON_VALUES, 'b"': '\\"[{:' * MAX_JSON_VALUES}
    assert await parse_json(json.dumps(text).encode()) == text
    with pytest.raises(TooManyValues):
        await parse_json(json.dumps(list(range(MAX_JSON_VALUES))).encode())


def test_the_archive_is_written_within_the_exports_budget() -> None:
    pages = {"index.html": "<p>a</p>"}
    assets = [("assets/image-1.png", Asset(b"\x89PNG", "png"))]
    with pytest.raises(ExportTooComplex):
        _zip(pages, assets, {}, CpuBudget(0.0))
    budget = CpuBudget(10.0)
    assert _zip(pages, assets, {}, budget).startswith(b"PK")
    assert not budget.over(0.0)
