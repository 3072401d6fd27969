"""The generation manager: starts planned generations and sees each one to its end.

It admits a plan (admission.py: a bound on the variants running at once), gives the
generation its deadline and its task, lets the runner (runner.py) do the work, and
ends it whatever happens: deadline, cancellation, a bug. Every generation ends with
one `generation_complete` event, and then goes to the archive (archive.py), which
keeps it for re-attaching clients and saves its final record.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from services.agent.admission import Admission
from services.agent.archive import Archive
from services.agent.eventlog import DEFAULT_CODE_TICK_S, MAX_CODE_TICK_S, CodePace
from services.agent.events import GenerationComplete, VariantError
from services.agent.generation import CANCELLED_AT_SHUTDOWN, Generation
from services.agent.metrics import AgentMetrics
from services.agent.planning import LEAVE_ID_EMPTY, GenerationPlan
from services.agent.runner import Runner
from services.agent.settings import AgentSettings

log = logging.getLogger(__name__)


class ShuttingDown(Exception):
    pass


class GenerationManager:
    def __init__(
        self, settings: AgentSettings, runner: Runner, archive: Archive, metrics: AgentMetrics
    ) -> None:
        self._settings = settings
        self._runner = runner
        self._archive = archive
        self._metrics = metrics
        self._running: dict[str, Generation] = {}
        self.closing = False
        self.admission = Admission(settings.max_running_variants)
        tick = settings.event_tick_s  # code never waits longer than text
        self.code_pace = CodePace(
            settings.code_messages_per_s,
            min(DEFAULT_CODE_TICK_S, tick),
            min(MAX_CODE_TICK_S, tick),
        )

    def generations(self) -> list[Generation]:
        """The generations this agent still holds (finished ones the archive keeps, then
        the running ones), oldest first."""
        held = [*self._archive.kept(), *self._running.values()]
        return sorted(held, key=lambda g: g.started_monotonic)

    def get(self, generation_id: str) -> Generation | None:
        """A generation this agent runs or still keeps in memory."""
        return self._running.get(generation_id) or self._archive.get(generation_id)

    def start(self, plan: GenerationPlan, *, deadline_s: float | None = None) -> Generation:
        """Starts a generation. Raises ValueError if its id is already in use,
        ShuttingDown once shutdown has begun and Busy when the agent is full."""
        if self.closing:
            raise ShuttingDown("The agent is shutting down; retry on another replica.")
        if self.get(plan.id) is not None:
            raise ValueError(f"generation_id {plan.id!r} is already in use. {LEAVE_ID_EMPTY}")
        release = self._admit(plan.variant_count)
        limit = self._settings.max_generation_s
        generation = Generation(
            plan.id,
            plan.request,
            tick_s=self._settings.event_tick_s,
            pace=self.code_pace,
            resume_grace_s=self._settings.resume_grace_s,
        )
        generation.deadline = generation.started_monotonic + (
            limit if deadline_s is None else min(limit, deadline_s)
        )
        self._running[plan.id] = generation
        generation.task = asyncio.create_task(
            self._run(generation, plan, release), name=f"gen-{plan.id}"
        )
        # Also for a task cancelled before its first step, whose `finally` never runs.
        generation.task.add_done_callback(lambda _: self._ended(generation, release))
        return generation

    def _admit(self, wanted: int) -> Callable[[], None]:
        """Admission's places for `wanted` variants (or Busy), and one more generation in
        the code pace; the release, idempotent, gives back both."""
        release_places = self.admission.admit(wanted)
        self.code_pace.started()
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                release_places()
                self.code_pace.ended()

        return release

    def _ended(self, generation: Generation, release: Callable[[], None]) -> None:
        release()
        # Normally the archive has it by now; a task cancelled before its first step
        # never ran its `finally`, and is only forgotten.
        if self._running.get(generation.id) is generation:
            del self._running[generation.id]

    async def shutdown(self, grace_s: float) -> None:
        """Refuses new generations, lets running ones finish for `grace_s`, then cancels
        the rest (their records close as cancelled)."""
        self.closing = True
        self._archive.close()
        running = [g.task for g in self._running.values() if g.task and not g.task.done()]
        if not running:
            return
        _, pending = await asyncio.wait(running, timeout=grace_s)
        for generation in list(self._running.values()):
            generation.cancel(CANCELLED_AT_SHUTDOWN)
        if pending:
            await asyncio.wait(pending)

    async def _run(
        self, generation: Generation, plan: GenerationPlan, release: Callable[[], None]
    ) -> None:
        log.info("generation started", extra={"generation_id": generation.id})
        await self._archive.save(generation)
        try:
            async with asyncio.timeout_at(_loop_time(generation.deadline)):
                generation.status = await self._runner.run(generation, plan)
        except TimeoutError:
            self._timed_out(generation)
        except asyncio.CancelledError:
            generation.status = "cancelled"
            generation.error = generation.cancelled_by or CANCELLED_AT_SHUTDOWN
            for variant in generation.variants:
                if variant.status == "running":
                    variant.status = "cancelled"
            raise
        except Exception as exc:  # a bug must still close the generation and tell the client
            log.exception("generation failed", extra={"generation_id": generation.id})
            generation.status = generation.fail(f"An unexpected error occurred: {exc}")
        finally:
            generation.publish(0, "", GenerationComplete(generation.status))
            # Free once ended, not after the final save: its client may start the next.
            release()
            del self._running[generation.id]
            self._metrics.generations.labels(generation.status).inc()
            log.info(
                "generation finished",
                extra={
                    "generation_id": generation.id,
                    "status": generation.status,
                    "ended_by": generation.error if generation.status == "cancelled" else "",
                    "variants": [v.status for v in generation.variants],
                    "seconds": round(time.time() - generation.started_at, 3),
                },
            )
            await self._archive.finished(generation)

    def _timed_out(self, generation: Generation) -> None:
        limit = generation.deadline - generation.started_monotonic
        message = f"The generation took longer than {limit:.0f} s and was stopped."
        for variant in generation.variants:
            if variant.status in ("running", "cancelled"):
                variant.status, variant.error = "failed", message
                generation.publish(variant.index, "", VariantError(message))
        if any(v.status == "completed" for v in generation.variants):
            generation.status = "completed"
        else:
            generation.status = generation.fail(message)


def _loop_time(monotonic_deadline: float) -> float:
    # asyncio deadlines are in loop time; ours are in time.monotonic().
    loop = asyncio.get_running_loop()
    return loop.time() + (monotonic_deadline - time.monotonic())
