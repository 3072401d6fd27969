"""Which scores also check accessibility (docs/accessibility.md): the first render of each
page and width, once; a score that fails gives an unavailable check saying why; the
setting turns it off."""

from __future__ import annotations

import time
from typing import Any

from services.agent.domain import FileState, VariantRecord
from services.agent.events import Accessibility, Fidelity
from services.agent.scoring import score_variant
from services.agent.settings import AgentSettings
from services.agent.tool_client import ToolServiceError
from services.agent.tooling import FidelityAnswer
from services.common.input_images import InputImage
from services.common.tool_types import ImageTag


class Worker:
    """A tool worker's answers: a score per image, a check when asked; fails for `broken`."""

    def __init__(self, broken: str = "") -> None:
        self.asked: list[tuple[int, str, int, bool]] = []
        self.broken = broken

    async def score_fidelity(self, code: str, image: InputImage, **kw: Any) -> FidelityAnswer:
        width = kw["viewport_width"] or 800
        self.asked.append((kw["image_index"], kw["path"], width, kw["check_accessibility"]))
        if kw["path"] == self.broken:
            raise ToolServiceError("no tool worker answered")
        check = Accessibility(width, score=1.0) if kw["check_accessibility"] else None
        return FidelityAnswer(Fidelity(kw["image_index"], width, text=1.0), accessibility=check)


def image(path: str = "", width: int = 0) -> InputImage:
    return InputImage.of("image/png", f"{path}{width}".encode(), ImageTag(path, width))


VARIANT = VariantRecord(
    0,
    "m",
    "completed",
    code="<p>a</p>",
    files=(FileState("index.html", "<p>a</p>"), FileState("pricing.html", "<p>b</p>")),
)


async def scored(worker: Worker, images: tuple[InputImage, ...], on: bool) -> list[Accessibility]:
    checks: list[Accessibility] = []
    await score_variant(
        worker,
        VARIANT,
        images,
        limit_s=10,
        deadline=time.monotonic() + 10,
        on_accessibility=checks.append if on else None,
    )
    return sorted(checks, key=lambda c: (c.path, c.viewport_width))


async def test_one_check_per_page_and_width() -> None:
    worker = Worker()
    images = (image("", 1280), image("index.html", 1280), image("pricing.html", 390), image())
    checks = await scored(worker, images, on=True)
    assert sorted(worker.asked) == [
        (0, "index.html", 1280, True),
        (1, "index.html", 1280, False),  # the same page at the same width: scored only
        (2, "pricing.html", 390, True),
        (3, "index.html", 800, True),  # untagged: its own width, unknown beforehand
    ]
    assert [(c.path, c.viewport_width, c.score) for c in checks] == [
        ("index.html", 800, 1.0),
        ("index.html", 1280, 1.0),
        ("pricing.html", 390, 1.0),
    ]


async def test_a_failed_score_is_an_unavailable_check_and_off_is_none() -> None:
    images = (image("index.html", 1280), image("pricing.html", 390))
    [index, pricing] = await scored(Worker(broken="pricing.html"), images, on=True)
    assert (index.score, pricing.score) == (1.0, None)
    assert (pricing.path, pricing.viewport_width) == ("pricing.html", 390)
    assert pricing.unavailable_reason == "no tool worker answered"
    worker = Worker()
    assert await scored(worker, images, on=False) == []
    assert [asked[3] for asked in worker.asked] == [False, False]


def test_the_setting_turns_the_check_off() -> None:
    assert AgentSettings.from_env({}).accessibility_enabled
    assert not AgentSettings.from_env({"S2C_ACCESSIBILITY": "0"}).accessibility_enabled
