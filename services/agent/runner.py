"""What a generation does once admitted: every variant of its plan, concurrently.

The runner announces the variants, asks the tool service what to offer, assembles the
prompt once and runs one engine per variant (engine.py), each with its own provider
session; a variant that fails stops only itself. It publishes into the generation's
log and records each variant's outcome (the run record, metrics, a log line). How the
generation ends — deadline, cancellation, completion — is the manager's.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable

from opentelemetry import context as otel_context
from opentelemetry import trace

from services.agent.domain import FileState, VariantRecord
from services.agent.engine import (
    ACCESSIBILITY_TOOL,
    COMPARE_TOOL,
    CostBudget,
    EngineError,
    PreviewReplay,
    VariantEngine,
)
from services.agent.events import (
    Accessibility,
    Fidelity,
    Payload,
    RunStatus,
    Status,
    Usage,
    VariantComplete,
    VariantCount,
    VariantError,
)
from services.agent.generation import Generation
from services.agent.guard import ChangeGuard, check_widths
from services.agent.live_build import for_variant
from services.agent.metrics import AgentMetrics
from services.agent.models import DEMO_MODEL_ID, ModelSpec
from services.agent.planning import GenerationPlan
from services.agent.prompts import PromptError, current_file
from services.agent.providers.base import ProviderError, ToolsRefused
from services.agent.providers.factory import SessionFactory, SessionRequest
from services.agent.refine import RefinePolicy, Refiner
from services.agent.scoring import score_variant
from services.agent.settings import AgentSettings
from services.agent.status_line import status_line
from services.agent.textmode import GenerationPrompts, ToollessModels
from services.agent.tool_client import ToolServiceError
from services.agent.tooling import ChangeClient, FidelityClient, ToolExecutor
from services.common.input_images import InputImage
from services.common.tracing import tracer

log = logging.getLogger(__name__)

ALL_FAILED = "Error generating code. Please contact support."

# Saves a generation's record as it stands; whether it was saved (archive.py).
Save = Callable[[Generation], Awaitable[bool]]


class Runner:
    def __init__(
        self,
        settings: AgentSettings,
        tools: ToolExecutor,
        sessions: SessionFactory,
        metrics: AgentMetrics,
        save: Save,
        fidelity: FidelityClient | None = None,
    ) -> None:
        self._fidelity = fidelity
        self._settings = settings
        self._tools = tools
        self._sessions = sessions
        self._metrics = metrics
        self._save = save
        # Models whose servers refused tools: their variants start in text mode.
        self.toolless = ToollessModels()

    async def run(self, generation: Generation, plan: GenerationPlan) -> RunStatus:
        """Runs every variant to its end; the generation's status: "completed" when any
        variant completed, else "failed" (with its `generation_error` published)."""
        if plan.refusal:
            return generation.fail(plan.refusal)
        specs = plan.models
        generation.variants = [
            VariantRecord(i, spec.id, priced=spec.priced) for i, spec in enumerate(specs)
        ]
        generation.publish(0, "", VariantCount(len(specs), tuple(s.id for s in specs)))
        # The full record so far: if this one lands, the start save's outcome is moot.
        saved = await self._save(generation)

        try:
            offer = await self._tools.list_tools(plan.tools)
        except ToolServiceError as exc:
            return generation.fail(str(exc))
        for i, spec in enumerate(specs):
            generation.publish(i, "", Status(status_line(spec, saved, offer.unavailable)))
        names = set(offer.names)
        request = plan.request
        images = plan.images_by_url()
        try:
            prompts = GenerationPrompts.build(
                request,
                offer.tools,
                names,
                # Ids are content hashes: the worker that later runs save_assets derives
                # the same id from the same image.
                {url: image.upload_id for url, image in images.items()}
                if "save_assets" in names
                else None,
            )
        except PromptError as exc:
            return generation.fail(f"Error assembling prompt: {exc}")

        budget = CostBudget(self._settings.max_cost_usd, self._settings.max_total_cost_usd)
        await asyncio.gather(
            *(
                self._run_variant(generation, plan, i, prompts, budget, names, images)
                for i in range(len(specs))
            )
        )
        if all(v.status == "failed" for v in generation.variants):
            return generation.fail(ALL_FAILED)
        return "completed"

    async def _run_variant(
        self,
        generation: Generation,
        plan: GenerationPlan,
        index: int,
        prompts: GenerationPrompts,
        budget: CostBudget,
        offer_names: set[str],
        images: dict[str, InputImage],
    ) -> None:
        state = generation.variants[index]
        spec = plan.models[index]
        settings = self._settings

        # Straight into the log (per streamed delta: no extra frame); a variant never
        # publishes the generation's completion, which is all Generation.publish adds.
        emit = functools.partial(generation.log.publish, index)

        engine: VariantEngine | None = None
        span = tracer("s2c.agent").start_span(
            f"variant {index}", attributes={"s2c.model": spec.id, "s2c.variant_index": index}
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        text_mode = not spec.tools or spec.id in self.toolless

        def engine_for(text_mode: bool) -> VariantEngine:
            if text_mode and plan.tools.build != "none":
                raise EngineError(
                    f"{spec.id} answers in text only; the {plan.request.stack} stack needs a "
                    "model that calls tools, to write its project file by file."
                )
            try:
                messages = prompts.text() if text_mode else prompts.messages
            except PromptError as exc:
                raise EngineError(f"Error assembling prompt: {exc}") from None
            tools = () if text_mode else prompts.tools
            wanted = SessionRequest(
                spec, index, messages, tools, plan.request, plan.credentials, images
            )
            session = self._sessions(wanted)
            budget.track(session)
            refiner = self._refiner(plan, spec, text_mode, offer_names, generation.deadline, emit)
            engine = VariantEngine(
                index=index,
                session=session,
                tools=self._tools,
                context=plan.tools,
                emit=emit,
                budget=budget,
                # Without file_state, an update's file is recovered from its history.
                file=current_file(plan.request),
                files={f.path: f for f in plan.request.files},
                max_turns=settings.max_turns,
                max_tool_calls_per_turn=settings.max_tool_calls_per_turn,
                max_checks={
                    COMPARE_TOOL: settings.max_compares_per_variant,
                    ACCESSIBILITY_TOOL: settings.max_accessibility_checks_per_variant,
                },
                deadline=generation.deadline,
                preview_replay=PreviewReplay(settings.preview_replay_s),
                priced=state.priced,
                text_mode=text_mode,
                refiner=refiner,
            )
            engine.guard = self._guard(
                plan, spec, text_mode, offer_names, engine.project(), generation.deadline, emit
            )
            if not text_mode:
                context = plan.tools
                build, owner = context.build, context.owner
                engine.live = for_variant(self._tools, build, engine.files, emit, owner)
            return engine

        try:
            engine = engine_for(text_mode)
            try:
                state.code = await engine.run()
            except ToolsRefused as exc:
                if text_mode:
                    raise
                # Refused before any output: asked once more, in text mode, and
                # remembered, so this model's next variants start there.
                self.toolless.add(spec.id)
                log.info("model refused tools", extra={"model": spec.id, "error": str(exc)})
                emit("", Status(f"{spec.id} takes no tools here: the page comes as text."))
                engine = engine_for(True)
                state.code = await engine.run()
            state.status = "completed"
            state.usage = engine.usage
            state.cost_usd = engine.session.total_cost_usd()
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
                # Like `code`, a project is kept only when the variant completed: the
                # entry page of the record is its code.
                state.files = engine.project() if state.status == "completed" else ()
                state.usage = engine.usage
                state.cost_usd = engine.session.total_cost_usd()
                if engine.refiner is not None:
                    state.refine_rounds = tuple(engine.refiner.rounds)
                if engine.guard is not None:
                    state.unrequested_changes = tuple(engine.guard.checks)
            self._observe(generation.id, spec, state)
            span.set_attribute("s2c.status", state.status)
            span.end()
            otel_context.detach(token)
        if state.status == "completed" and "screenshot_preview" in offer_names:
            # After variant_complete went out, so scoring never delays it; before the
            # generation's end, which waits for every variant (at most the timeout). Only
            # where the workers have a browser (they offer screenshot_preview then).
            refined = engine.refiner.final_fidelity() if engine and engine.refiner else ()
            await self._score(generation, plan, state, emit, refined)

    async def _score(
        self,
        generation: Generation,
        plan: GenerationPlan,
        state: VariantRecord,
        emit: Callable[[str, Payload], None],
        refined: tuple[Fidelity, ...] = (),
    ) -> None:
        """Scores the variant's pages against the input images (docs/eval.md), publishing
        one `fidelity` event per image: the scores, or why there are none. `refined`: the
        scores refinement already made of the variant's final pages, reused as they are."""
        client, limit_s = self._fidelity, self._settings.fidelity_timeout_s
        if not plan.scores or client is None or limit_s <= 0:
            return
        if not plan.images or not state.code.strip():
            return
        checks: list[Accessibility] = []
        checked = self._settings.accessibility_enabled
        # Refinement's last scores are reused, unless the pages still want their
        # accessibility check, which rides on a render of its own (the OCR is kept).
        state.fidelity = (
            refined
            if refined and not checked
            else await score_variant(
                client,
                state,
                plan.images,
                limit_s=limit_s,
                deadline=generation.deadline,
                owner=plan.id,
                on_accessibility=checks.append if checked else None,
            )
        )
        for score in state.fidelity:
            emit("", score)
        state.accessibility = tuple(sorted(checks, key=lambda c: (c.path, c.viewport_width)))
        for check in state.accessibility:
            emit("", check)

    def _refiner(
        self,
        plan: GenerationPlan,
        spec: ModelSpec,
        text_mode: bool,
        offer_names: set[str],
        deadline: float,
        emit: Callable[[str, Payload], None],
    ) -> Refiner | None:
        """The variant's refinement (refine.py), or None: no rounds asked, no images, the
        demo model (its script reads no answer), or workers that cannot score (no browser:
        they offer no screenshot_preview then)."""
        client, settings = self._fidelity, self._settings
        if not plan.refine_rounds or client is None or settings.fidelity_timeout_s <= 0:
            return None
        if spec.provider == DEMO_MODEL_ID:
            return None
        if "screenshot_preview" not in offer_names:
            return None
        policy = RefinePolicy(
            rounds=plan.refine_rounds,
            target=settings.refine_target,
            limit_s=settings.fidelity_timeout_s,
            vision=spec.vision,
            text_mode=text_mode,
        )
        return Refiner(
            client, plan.images, policy, lambda s: emit("", s), deadline=deadline, owner=plan.id
        )

    def _guard(
        self,
        plan: GenerationPlan,
        spec: ModelSpec,
        text_mode: bool,
        offer_names: set[str],
        before: tuple[FileState, ...],
        deadline: float,
        emit: Callable[[str, Payload], None],
    ) -> ChangeGuard | None:
        """The variant's change check (guard.py), or None: not an update about a selected
        element, the demo model (its script reads no answer), a built project (its page
        is the build's, not a file the update starts from), or workers that cannot
        render (no browser: they offer no screenshot_preview then)."""
        client, request = self._fidelity, plan.request
        selected = request.prompt.selected_element_html
        if request.generation_type != "update" or not selected.strip() or not before:
            return None
        if not isinstance(client, ChangeClient) or self._settings.fidelity_timeout_s <= 0:
            return None
        if spec.provider == DEMO_MODEL_ID or plan.tools.build != "none":
            return None
        if "screenshot_preview" not in offer_names:
            return None
        return ChangeGuard(
            client,
            before,
            selected,
            check_widths(plan.images),
            self._settings.fidelity_timeout_s,
            text_mode,
            lambda e: emit("", e),
            deadline=deadline,
            owner=plan.id,
        )

    def _observe(self, generation_id: str, spec: ModelSpec, state: VariantRecord) -> None:
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
        provider = spec.provider
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
