"""Generations: run every variant of a request concurrently and keep their events.

A `Generation` owns an append-only event log (sequence numbers are 1-based and
gapless) that any number of watchers read at their own pace, so a client that
reconnects re-reads from where it stopped. The `GenerationManager` starts,
finds, cancels and retires generations.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence

from opentelemetry import context as otel_context
from opentelemetry import trace

from services.agent import pricing
from services.agent.admission import Admission, variant_plan
from services.agent.domain import GenerationRequest, VariantRecord
from services.agent.engine import CostBudget, EngineError, PreviewReplay, VariantEngine
from services.agent.eventlog import (
    DEFAULT_CODE_TICK_S,
    DEFAULT_TICK_S,
    MAX_CODE_TICK_S,
    CodePace,
    EventLog,
)
from services.agent.events import (
    Event,
    GenerationComplete,
    GenerationError,
    Payload,
    RunStatus,
    Status,
    Usage,
    VariantComplete,
    VariantCount,
    VariantError,
)
from services.agent.metrics import AgentMetrics
from services.agent.models import (
    ModelSelectionError,
    ModelSpec,
    has_video,
    select_models,
)
from services.agent.prompts import PromptError, build_prompt_messages, current_file
from services.agent.providers.base import PromptMessage, ProviderError, ToolSpec
from services.agent.providers.factory import SessionFactory, SessionRequest
from services.agent.retention import Retention, retained_size
from services.agent.runstore import RunRecord, RunStore, snapshot
from services.agent.settings import AgentSettings
from services.agent.status_line import status_line
from services.agent.tool_client import ToolServiceError
from services.agent.tooling import ToolContext, ToolExecutor, ToolOffer
from services.common.credentials import Credentials, CredentialsError
from services.common.tracing import tracer
from services.common.uploads import decode_image_data_url, upload_id

log = logging.getLogger(__name__)

ALL_FAILED = "Error generating code. Please contact support."


class ShuttingDown(Exception):
    pass


class Generation:
    def __init__(
        self,
        generation_id: str,
        request: GenerationRequest,
        *,
        tick_s: float = DEFAULT_TICK_S,
        pace: CodePace | None = None,
    ) -> None:
        self.id = generation_id
        self.request = request
        self.status: RunStatus = "running"
        self.error = ""
        self.started_at = time.time()
        self.started_monotonic = time.monotonic()
        self.finished_at: float | None = None
        self.variants: list[VariantRecord] = []
        self.deadline = float("inf")  # time.monotonic() by which the work must end
        self.task: asyncio.Task[None] | None = None
        self.log = EventLog(generation_id, tick_s, pace=pace)
        self._owners = 0
        self.unadmit: Callable[[], None] = _nothing  # frees its admission places

    @property
    def finished(self) -> bool:
        return self.finished_at is not None

    @property
    def last_sequence(self) -> int:
        return len(self.log)

    def publish(self, variant_index: int, event_id: str, payload: Payload) -> None:
        if self.finished:
            return
        self.log.publish(variant_index, event_id, payload)
        if isinstance(payload, GenerationComplete):
            self.finished_at = time.time()

    def batches(self, after_sequence: int = 0) -> AsyncIterator[Sequence[Event]]:
        """Events with sequence > after_sequence, as many at a time as are committed,
        live until the generation ends."""
        return self.log.batches(after_sequence)

    def cancel(self) -> bool:
        # Once finished only the final save is left, and that is shielded: cancelling
        # would gain nothing and leave the task holding a CancelledError (see _retire).
        if self.task is None or self.task.done() or self.finished:
            return False
        return self.task.cancel()

    def acquire(self) -> None:
        """A client stream now depends on this generation."""
        self._owners += 1

    def release(self) -> None:
        """A client stream went away; the last one leaving cancels unfinished work,
        so nothing runs (and bills) for nobody."""
        self._owners -= 1
        if self._owners <= 0:
            self.cancel()


class GenerationManager:
    def __init__(
        self,
        settings: AgentSettings,
        tools: ToolExecutor,
        sessions: SessionFactory,
        metrics: AgentMetrics | None = None,
        store: RunStore | None = None,
    ) -> None:
        self._settings = settings
        self._tools = tools
        self._sessions = sessions
        self._metrics = metrics or AgentMetrics()
        self._store = store
        self._generations: OrderedDict[str, Generation] = OrderedDict()
        self._retention = Retention(settings.retention, self._retire)
        self.closing = False
        self.admission = Admission(settings.max_running_variants)
        tick = settings.event_tick_s  # code never waits longer than text
        self.code_pace = CodePace(
            settings.code_messages_per_s,
            min(DEFAULT_CODE_TICK_S, tick),
            min(MAX_CODE_TICK_S, tick),
        )

    async def tool_offer(self, credentials: Credentials) -> ToolOffer:
        """The tools a generation with these credentials would be offered (and those the
        workers cannot run now)."""
        context = ToolContext(credentials=credentials, assume_input_images=True)
        return await self._tools.list_tools(context)

    def generations(self) -> list[Generation]:
        """The generations this agent still holds, oldest first."""
        return list(self._generations.values())

    def get(self, generation_id: str) -> Generation | None:
        return self._generations.get(generation_id)

    def start(self, request: GenerationRequest, *, deadline_s: float | None = None) -> Generation:
        """Starts a generation. Raises ValueError if its id is already in use,
        ShuttingDown once shutdown has begun and Busy when the agent is full."""
        if self.closing:
            raise ShuttingDown("The agent is shutting down; retry on another replica.")
        generation_id = request.generation_id or uuid.uuid4().hex
        if generation_id in self._generations:
            raise ValueError(f"generation_id {generation_id!r} is already in use")
        try:
            wanted, _ = variant_plan(request, self._settings)
        except CredentialsError:
            wanted = 1  # refused at its start
        release = self._admit(wanted)
        generation = Generation(
            generation_id, request, tick_s=self._settings.event_tick_s, pace=self.code_pace
        )
        generation.unadmit = release
        limit = self._settings.max_generation_s
        generation.deadline = time.monotonic() + (
            limit if deadline_s is None else min(limit, deadline_s)
        )
        self._generations[generation_id] = generation
        generation.task = asyncio.create_task(self._run(generation), name=f"gen-{generation_id}")
        # Also for a task cancelled before its first step, whose `finally` never runs.
        generation.task.add_done_callback(lambda _: release())
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

    async def shutdown(self, grace_s: float) -> None:
        """Refuses new generations, lets running ones finish for `grace_s`, then cancels
        the rest (their records close as cancelled)."""
        self.closing = True
        self._retention.close()
        running = [g.task for g in self._generations.values() if g.task and not g.task.done()]
        if not running:
            return
        _, pending = await asyncio.wait(running, timeout=grace_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    def _retire(self, generation_id: str) -> None:
        # Its record stays in the store, and WatchGeneration replays that.
        generation = self._generations.pop(generation_id, None)
        if generation is not None:
            # A cancelled task keeps its CancelledError, whose traceback holds the frame
            # holding this generation: a cycle that only a full collection would free
            # (one per ~150 generations), so every retired log waited for it.
            generation.task = None
        self._gauge_retention()

    def _gauge_retention(self) -> None:
        self._metrics.retained_generations.set(self._retention.count)
        self._metrics.retained_bytes.set(self._retention.bytes)

    async def _save(self, generation: Generation) -> bool:
        """Whether the record was saved. Never fails the generation: the store reports
        failures (health, metric, the cause logged once, each lost final record logged)."""
        if self._store is None:
            return True
        try:
            await self._store.save(snapshot(generation, self._settings.credentials.secrets()))
        except Exception:
            return False
        return True

    async def get_record(self, generation_id: str) -> RunRecord | None:
        """The run record: from memory while retained, else from the store."""
        generation = self._generations.get(generation_id)
        if generation is not None:
            return snapshot(generation, self._settings.credentials.secrets())
        return await self._store.get(generation_id) if self._store is not None else None

    async def _run(self, generation: Generation) -> None:
        log.info("generation started", extra={"generation_id": generation.id})
        await self._save(generation)
        try:
            async with asyncio.timeout_at(_loop_time(generation.deadline)):
                status = await self._run_variants(generation)
            generation.status = status
        except TimeoutError:
            limit = generation.deadline - generation.started_monotonic
            message = f"The generation took longer than {limit:.0f} s and was stopped."
            for variant in generation.variants:
                if variant.status in ("running", "cancelled"):
                    variant.status, variant.error = "failed", message
                    generation.publish(variant.index, "", VariantError(message))
            if any(v.status == "completed" for v in generation.variants):
                generation.status = "completed"
            else:
                generation.status = "failed"
                generation.error = message
                generation.publish(0, "", GenerationError(message))
        except asyncio.CancelledError:
            generation.status = "cancelled"
            for variant in generation.variants:
                if variant.status == "running":
                    variant.status = "cancelled"
            raise
        except Exception as exc:  # a bug must still close the generation and tell the client
            log.exception("generation failed", extra={"generation_id": generation.id})
            generation.status = "failed"
            generation.error = f"An unexpected error occurred: {exc}"
            generation.publish(0, "", GenerationError(generation.error))
        finally:
            generation.publish(0, "", GenerationComplete(generation.status))
            # Free once ended, not after the final save: its client may start the next.
            generation.unadmit()
            self._retention.finished(generation.id, retained_size(generation))
            self._gauge_retention()
            self._metrics.generations.labels(generation.status).inc()
            log.info(
                "generation finished",
                extra={
                    "generation_id": generation.id,
                    "status": generation.status,
                    "variants": [v.status for v in generation.variants],
                    "seconds": round(time.time() - generation.started_at, 3),
                },
            )
            # Shielded inside the store, so a cancelled generation still closes its record.
            await self._save(generation)

    def _fail(self, generation: Generation, message: str) -> RunStatus:
        generation.error = message
        generation.publish(0, "", GenerationError(message))
        return "failed"

    async def _run_variants(self, generation: Generation) -> RunStatus:
        request = generation.request
        settings = self._settings
        try:
            count, keys = variant_plan(request, settings)
        except CredentialsError as exc:
            return self._fail(generation, f"Refused credentials: {exc}")
        pinned = request.models or settings.pinned_models
        try:
            specs = select_models(
                generation_type=request.generation_type,
                input_mode=request.input_mode,
                count=count,
                providers_with_keys=keys,
                pinned=pinned,
                local_models=settings.local_models,
                has_video=has_video(request),
            )
        except ModelSelectionError as exc:
            return self._fail(generation, str(exc))
        generation.variants = [
            VariantRecord(i, spec.id, priced=pricing.is_priced(spec.provider, spec.api_name))
            for i, spec in enumerate(specs)
        ]
        generation.publish(0, "", VariantCount(count, tuple(s.id for s in specs)))
        # The full record so far: if this one lands, the start save's outcome is moot.
        saved = await self._save(generation)

        context = ToolContext(
            input_images=_input_images(request),
            option_codes=request.option_codes,
            image_generation_enabled=request.image_generation_enabled,
            asset_extraction_enabled=request.asset_extraction_enabled,
            credentials=request.credentials,
            asset_base_url=request.asset_base_url,
        )
        try:
            offer = await self._tools.list_tools(context)
        except ToolServiceError as exc:
            return self._fail(generation, str(exc))
        for i, spec in enumerate(specs):
            generation.publish(i, "", Status(status_line(spec, saved, offer.unavailable)))
        tools, names = offer.tools, set(offer.names)
        try:
            messages = build_prompt_messages(
                request,
                tools=names,
                uploaded_asset_ids=upload_ids(request) if "save_assets" in names else None,
            )
        except PromptError as exc:
            return self._fail(generation, f"Error assembling prompt: {exc}")

        budget = CostBudget(settings.max_cost_usd, settings.max_total_cost_usd)
        await asyncio.gather(
            *(
                self._run_variant(generation, i, spec, messages, tools, context, budget)
                for i, spec in enumerate(specs)
            )
        )
        if all(v.status == "failed" for v in generation.variants):
            return self._fail(generation, ALL_FAILED)
        return "completed"

    async def _run_variant(
        self,
        generation: Generation,
        index: int,
        spec: ModelSpec,
        messages: Sequence[PromptMessage],
        tools: Sequence[ToolSpec],
        context: ToolContext,
        budget: CostBudget,
    ) -> None:
        state = generation.variants[index]
        request = generation.request

        # Straight into the log (per streamed delta: no extra frame); a variant never
        # publishes the generation's completion, which is all Generation.publish adds.
        emit = functools.partial(generation.log.publish, index)

        engine: VariantEngine | None = None
        span = tracer("s2c.agent").start_span(
            f"variant {index}", attributes={"s2c.model": spec.id, "s2c.variant_index": index}
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            session = self._sessions(
                SessionRequest(spec, index, tuple(messages), tuple(tools), request)
            )
            budget.track(session)
            # Without file_state, an update's file is recovered from its history.
            file = current_file(request)
            engine = VariantEngine(
                index=index,
                session=session,
                tools=self._tools,
                context=context,
                emit=emit,
                budget=budget,
                file=file,
                max_turns=self._settings.max_turns,
                max_tool_calls_per_turn=self._settings.max_tool_calls_per_turn,
                deadline=generation.deadline,
                preview_replay=PreviewReplay(self._settings.preview_replay_s),
                priced=state.priced,
            )
            state.code = await engine.run()
            state.status = "completed"
            state.usage = engine.usage
            state.cost_usd = session.total_cost_usd()
            emit("", VariantComplete(Usage(engine.usage, state.cost_usd, state.priced)))
        except (EngineError, ProviderError) as exc:
            state.status, state.error = "failed", str(exc)
            emit("", VariantError(state.error))
        except asyncio.CancelledError:
            state.status = "cancelled"
            raise
        except Exception as exc:
            # Anything unexpected fails this variant only; the others go on.
            log.exception("variant failed", extra={"generation_id": generation.id})
            state.status, state.error = "failed", str(exc) or type(exc).__name__
            emit("", VariantError(state.error))
        finally:
            if engine is not None:
                state.tool_calls = tuple(engine.tool_records)
                state.usage = engine.usage
                state.cost_usd = engine.session.total_cost_usd()
            self._observe(generation.id, spec.provider, state)
            span.set_attribute("s2c.status", state.status)
            span.end()
            otel_context.detach(token)

    def _observe(self, generation_id: str, provider: str, state: VariantRecord) -> None:
        log.info(
            "variant finished",
            extra={
                "generation_id": generation_id,
                "variant_index": state.index,
                "model": state.model,
                "status": state.status,
                "error": state.error,
                "tool_calls": [(t.id, t.name, t.ok, t.duration_ms) for t in state.tool_calls],
                "cost_usd": state.cost_usd,
            },
        )
        m = self._metrics
        m.variants.labels(provider, state.status).inc()
        for record in state.tool_calls:
            m.tool_seconds.labels(record.name, str(record.ok).lower()).observe(
                record.duration_ms / 1000
            )
        usage = state.usage
        for kind, count in (
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
            ("cache_read", usage.cache_read_tokens),
            ("cache_write", usage.cache_write_tokens),
        ):
            if count:
                m.tokens.labels(provider, kind).inc(count)
        if state.cost_usd:
            m.cost.labels(provider).inc(state.cost_usd)


def _nothing() -> None:
    pass


def _loop_time(monotonic_deadline: float) -> float:
    # asyncio deadlines are in loop time; ours are in time.monotonic().
    loop = asyncio.get_running_loop()
    return loop.time() + (monotonic_deadline - time.monotonic())


def upload_ids(request: GenerationRequest) -> dict[str, str]:
    """Uploaded image → its `tmp_asset_…` id. Ids are content hashes, so the tool
    worker that later runs save_assets derives the same id from the same image."""
    ids: dict[str, str] = {}
    for url in _input_images(request):
        image = decode_image_data_url(url)
        if image is not None:
            ids[url] = upload_id(image.data)
    return ids


def _input_images(request: GenerationRequest) -> tuple[str, ...]:
    """Still images the tools may use: the prompt's and every user history message's."""
    images = list(request.prompt.images)
    for message in request.history:
        if message.role == "user":
            images.extend(message.images)
    seen: dict[str, None] = dict.fromkeys(i for i in images if i.startswith("data:image/"))
    return tuple(seen)
