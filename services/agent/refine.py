"""Refinement: a variant's page scored against the input screenshots, improved towards
them round by round, and never left worse than its best (docs/fidelity.md).

The engine asks `Refiner.review` each time the model ends a turn with a page. The page is
scored (the tool workers' ScoreFidelity, with the worst regions and the side-by-side
image); below the target, and while rounds and budget remain, the answer is the user
turn that names what differs. A round that scores lower than the best before it ends
refinement and `best` says which version the variant keeps: the engine restores it.
Every version's score is kept for the run record (`rounds`).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from services.agent.domain import FileState
from services.agent.events import Fidelity, FidelityRegion, RefineRound, Status
from services.agent.providers.base import PromptMessage
from services.agent.scoring import score_project
from services.agent.tooling import FidelityAnswer, FidelityClient
from services.common.input_images import InputImage

METRICS = ("block_match", "text", "position", "color", "visual")
# The regions named per round: the worker returns at most eight per screenshot.
MAX_REGIONS = 8


@dataclass(frozen=True, slots=True)
class RefinePolicy:
    """One variant's refinement, decided by the plan (planning.refine_rounds)."""

    rounds: int  # the most rounds; 0: the page is not refined
    target: float  # S2C_REFINE_TARGET: a page at or above it is done
    limit_s: float  # one score's time limit (S2C_FIDELITY_TIMEOUT_S)
    vision: bool  # the model reads images: it gets the side-by-side image too
    text_mode: bool  # the model answers with a fenced page, not with edit_file


def mean_score(scores: tuple[Fidelity, ...]) -> float | None:
    """The mean of the five metrics over the scored screenshots; None when any
    screenshot could not be scored (nothing to judge a round by)."""
    values: list[float] = []
    for score in scores:
        metrics = [getattr(score, m) for m in METRICS]
        if score.unavailable_reason or any(v is None for v in metrics):
            return None
        values.append(sum(metrics) / len(metrics))
    return sum(values) / len(values) if values else None


@dataclass
class Refiner:
    client: FidelityClient
    images: tuple[InputImage, ...]
    policy: RefinePolicy
    emit: Callable[[Status | RefineRound], None]  # into the variant's events
    deadline: float = float("inf")
    owner: str = ""
    rounds: list[RefineRound] = field(default_factory=list)
    # The best version so far: its files, score and round; what the variant ends with.
    best: tuple[FileState, ...] = ()
    best_score: float = -1.0
    best_round: int = 0
    # The scores of the best version, one per screenshot (the variant's `fidelity`).
    best_fidelity: tuple[Fidelity, ...] = ()

    def final_fidelity(self) -> tuple[Fidelity, ...]:
        """The scores of the page the variant ends with, when its last version was scored
        (then it ends with the best one); empty otherwise."""
        scored = bool(self.rounds) and self.rounds[-1].score is not None
        return self.best_fidelity if scored else ()

    @property
    def rolled_back(self) -> bool:
        return bool(self.rounds) and self.rounds[-1].rolled_back

    async def review(
        self, project: tuple[FileState, ...], affordable: bool
    ) -> PromptMessage | None:
        """Scores `project`, the page the model just ended a turn with; the next round's
        user turn, or None when the variant is done (then it keeps `best`)."""
        number = len(self.rounds)
        answers = await score_project(
            self.client,
            project,
            self.images,
            limit_s=self.policy.limit_s,
            deadline=self.deadline,
            owner=self.owner,
            with_regions=True,
        )
        scores = tuple(a.fidelity for a in answers)
        score = mean_score(scores)
        before = self.best_score
        worse = score is not None and number > 0 and score < before
        self.rounds.append(RefineRound(number, score, rolled_back=worse))
        self.emit(self.rounds[-1])
        if score is None:
            why = next((s.unavailable_reason for s in scores if s.unavailable_reason), "")
            self._say(f"Not refined: the page could not be scored ({why or 'no metrics'}).")
            return None
        if not worse:
            self.best, self.best_score, self.best_round = project, score, number
            self.best_fidelity = scores
        if number:
            self._say(self._round_line(number, before, score, worse))
        if worse or score >= self.policy.target:
            return None
        if number >= self.policy.rounds:
            if number == 0:
                self._say(f"Scored {score:.2f}; the target is {self.policy.target:.2f}.")
            return None
        if not affordable:
            self._say(f"Scored {score:.2f}: not refined further, the cost budget is spent.")
            return None
        if time.monotonic() + 2 * self.policy.limit_s > self.deadline:
            self._say(f"Scored {score:.2f}: not refined further, too little time is left.")
            return None
        if number == 0:
            rounds = self.policy.rounds
            self._say(
                f"Scored {score:.2f} against the screenshot, below the target "
                f"{self.policy.target:.2f}: refining (at most {rounds} "
                f"round{'s' if rounds > 1 else ''})."
            )
        return self._turn(score, answers)

    def _round_line(self, number: int, before: float, after: float, worse: bool) -> str:
        line = f"Refine round {number}: {before:.2f} → {after:.2f}"
        if worse:
            return f"{line}, worse: rolled back to round {self.best_round} ({before:.2f})."
        return f"{line}."

    def _say(self, text: str) -> None:
        self.emit(Status(text))

    def _turn(self, score: float, answers: tuple[FidelityAnswer, ...]) -> PromptMessage:
        lines = [
            f"Your page scores {score:.2f} against the screenshot (1 = the same; the target "
            f"is {self.policy.target:.2f})."
        ]
        images: list[str] = []
        for answer in answers:
            fidelity = answer.fidelity
            metrics = ", ".join(f"{m} {getattr(fidelity, m):.2f}" for m in METRICS)
            page = fidelity.path or "the page"
            lines.append(
                f"Screenshot {fidelity.image_index + 1} against {page} at "
                f"{fidelity.viewport_width} px: {metrics}. What differs most (boxes in the "
                "screenshot's pixels: x, y, width, height):"
            )
            lines += [_region_line(r) for r in fidelity.regions[:MAX_REGIONS]]
            if self.policy.vision and answer.comparison_png:
                data = base64.b64encode(answer.comparison_png).decode("ascii")
                images.append(f"data:image/png;base64,{data}")
        if images:
            lines.append(
                "Each attached image shows a screenshot on the left and your page on the right."
            )
        if self.policy.text_mode:
            lines.append(
                "Fix these differences and keep everything else. Answer with the whole "
                "corrected page in one ```html fenced block."
            )
        else:
            lines.append(
                "Fix these differences with edit_file (create_file only to rewrite a file), "
                "keep everything else, then end your turn."
            )
        return PromptMessage("user", "\n".join(lines), images=tuple(images))


def _region_line(region: FidelityRegion) -> str:
    r = region
    has = f'the page has "{r.actual_text}"' if r.actual_text else "the page has nothing there"
    box = f"({r.x}, {r.y}, {r.width}, {r.height})"
    return f'- {box} {r.issue}: expected "{r.expected_text}", {has}'
