"""The planning step: a request is checked once and becomes a frozen `GenerationPlan`.

Everything a generation needs to know before it runs is decided here, once: the
request's credentials resolved against the agent's (the pairing rule,
services/common/credentials.py), the pinned model ids resolved, the variants' models
chosen, the id minted. The manager admits and runs the plan; the runner, the session
factory and the tools read it and decide nothing of it again.

A request the agent must refuse is refused here, every bad field at once
(`InvalidRequest`, which the servicer answers INVALID_ARGUMENT). A request that is valid
but whose models cannot be chosen (a video with no Gemini key, an unknown id in
`S2C_MODELS`) is still planned: its generation starts and fails with that message, as a
stream the client reads like any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from services.agent.domain import GenerationRequest
from services.agent.inputs import input_images, prepare_images
from services.agent.models import (
    LOCAL_PREFIX,
    ModelSelectionError,
    ModelSpec,
    endpoint_specs,
    has_images,
    has_video,
    no_images,
    no_video,
    resolve,
    select_models,
    takes_video,
    variant_count,
)
from services.agent.pages import meta_violations, page_plan, project_violations, render_violations
from services.agent.providers import registry
from services.agent.settings import AgentSettings
from services.agent.tooling import ToolContext
from services.common import generation_ids
from services.common.credentials import Credentials
from services.common.errors import FieldViolation, InvalidRequest
from services.common.input_images import InputImage
from services.common.project_paths import path_problem
from services.common.react_project import build_of

# How a refusal of a client's generation id ends.
LEAVE_ID_EMPTY = "Leave generation_id empty and the agent mints one."
# Variants of a generation with nothing configured (the demo model).
DEMO_VARIANTS = 2


@dataclass(frozen=True, slots=True)
class GenerationPlan:
    """One generation, decided: what runs it and with what."""

    request: GenerationRequest  # as asked, with its id (minted when the caller gave none)
    # Every credential source's (key, base URL), resolved once against the agent's own.
    credentials: Credentials
    # The model of each variant; empty when `refusal` says why none could be chosen.
    models: tuple[ModelSpec, ...]
    # The variants admission counts: len(models), or what the request would have run.
    variant_count: int
    tools: ToolContext  # what every tool call carries (the request's own credentials)
    refusal: str = ""
    # The still input images, each parsed once with its hash, size and tag (inputs.py).
    images: tuple[InputImage, ...] = ()
    # Score the finished variants against the input images (`needs_scores`).
    scores: bool = False
    # The refinement rounds each variant may take towards the input images (refine.py).
    refine_rounds: int = 0

    @property
    def id(self) -> str:
        return self.request.generation_id

    def images_by_url(self) -> dict[str, InputImage]:
        """Each input image by the data URL it came as (what prompts and providers hold)."""
        return dict(zip(input_images(self.request), self.images, strict=True))


class Planner:
    def __init__(self, settings: AgentSettings) -> None:
        self._settings = settings
        self._policy = settings.credential_policy
        # S2C_MODELS, resolved once; an unknown entry fails each generation it pins.
        self._configured: dict[str, ModelSpec] = {}
        self._configured_error = ""
        for model_id in settings.pinned_models:
            try:
                self._configured[model_id] = self._resolve(model_id)
            except ModelSelectionError as exc:
                self._configured_error = self._configured_error or str(exc)

    def _resolve(self, model_id: str) -> ModelSpec:
        return resolve(model_id, self._settings.endpoints)

    @property
    def name(self) -> str:
        """The agent's name: the prefix of every id it mints."""
        return self._settings.agent_name

    def plan(
        self, request: GenerationRequest, found: Sequence[FieldViolation] = ()
    ) -> GenerationPlan:
        """The plan of `request`, or InvalidRequest listing `found` (what converting the
        request found wrong) and every violation of the plan's own. Blocking: it parses
        every input image once (inputs.py), so the servicer runs it in a thread."""
        violations = list(found)
        asked: dict[str, ModelSpec] = {}  # the request's pinned models, by the ids it gave
        for i, model_id in enumerate(request.models):
            try:
                asked[model_id] = self._resolve(model_id)
            except ModelSelectionError as exc:
                violations.append(FieldViolation(f"models[{i}]", str(exc)))
        violations += self._id_violations(request.generation_id)
        violations += self._policy.violations(request.credentials, prefix="credentials.")
        violations += self._video_violations(request, asked)
        violations += meta_violations(
            len(request.prompt.images), request.prompt.image_meta, self._settings.max_pages
        )
        violations += project_violations(
            request.files,
            self._settings.max_project_bytes,
            self._settings.max_project_files,
            build=build_of(request.stack),
        )
        if request.file_state is not None and (problem := path_problem(request.file_state.path)):
            violations.append(FieldViolation("file_state.path", f"not a project path: {problem}"))
        violations += render_violations(
            page_plan(len(request.prompt.images), request.prompt.image_meta),
            variant_count(request.generation_type, request.input_mode, request.variant_count),
            self._settings.max_renders,
        )
        violations += self._image_violations(request, asked)
        if request.refine_rounds is not None and request.refine_rounds < 0:
            violations.append(FieldViolation("refine_rounds", "must be 0 or more"))
        images, problems = prepare_images(request, self._settings.images)
        violations += problems
        if violations:
            raise InvalidRequest(violations)

        credentials = self._policy.resolve(request.credentials)
        keys = frozenset(p.id for p in registry.KEYED if credentials.key(p.credential))
        count = variant_count(request.generation_type, request.input_mode, request.variant_count)
        settings = self._settings
        configured = keys or settings.pinned_models or settings.local_models or settings.endpoints
        if not (configured or request.models or request.variant_count):
            count = DEMO_VARIANTS
        models: list[ModelSpec] = []
        refusal = "" if request.models else self._configured_error
        if not refusal:
            source = asked if request.models else self._configured
            pinned = [source[model_id] for model_id in request.models or settings.pinned_models]
            try:
                models = select_models(
                    generation_type=request.generation_type,
                    input_mode=request.input_mode,
                    count=count,
                    providers_with_keys=keys,
                    pinned=pinned,
                    local_models=settings.local_models,
                    endpoint_models=endpoint_specs(settings.endpoints),
                    has_video=has_video(request),
                    has_images=has_images(request),
                )
            except ModelSelectionError as exc:
                refusal = str(exc)
        generation_id = request.generation_id or generation_ids.mint(self.name)
        request = replace(request, generation_id=generation_id)
        return GenerationPlan(
            request=request,
            credentials=credentials,
            models=tuple(models),
            variant_count=count,
            tools=tool_context(
                request, images, settings.max_project_bytes, settings.max_project_files
            ),
            refusal=refusal,
            images=images,
            scores=needs_scores(request),
            refine_rounds=refine_rounds(request, settings, images),
        )

    def _id_violations(self, generation_id: str) -> list[FieldViolation]:
        """A client's own id in the shape this agent mints must name this agent: a
        gateway sends a resume to the agent the id names, which would not hold it."""
        owner = generation_ids.owner_name(generation_id)
        if owner is None or owner == self.name:
            return []
        return [
            FieldViolation(
                "generation_id",
                f"names agent {owner!r}, not this one ({self.name!r}): a resume would look "
                f"for it there. {LEAVE_ID_EMPTY}",
            )
        ]

    def _video_violations(
        self, request: GenerationRequest, asked: dict[str, ModelSpec]
    ) -> list[FieldViolation]:
        """A pinned model that takes no video would silently drop the request's video:
        one violation per such model, on the field that pinned it."""
        if not has_video(request):
            return []
        if request.models:
            # Named as the request names them (an alias stays an alias).
            return [
                FieldViolation(f"models[{i}]", no_video(model_id))
                for i, model_id in enumerate(request.models)
                if model_id in asked and not takes_video(asked[model_id])
            ]
        return [
            FieldViolation("prompt.videos", f"{no_video(model_id)} (pinned by S2C_MODELS)")
            for model_id, spec in self._configured.items()
            if not takes_video(spec)
        ]

    def _image_violations(
        self, request: GenerationRequest, asked: dict[str, ModelSpec]
    ) -> list[FieldViolation]:
        """A pinned model that reads no images is refused pictures before any request is
        made of it: one violation per such model, as for video."""
        if not has_images(request):
            return []
        if request.models:
            blind = [(f"models[{i}]", m, asked.get(m)) for i, m in enumerate(request.models)]
            suffix = ""
        else:
            blind = [("prompt.images", m, s) for m, s in self._configured.items()]
            suffix = " (pinned by S2C_MODELS)"
        found = [(field, m) for field, m, spec in blind if spec is not None and not spec.vision]
        if not found:
            return []
        readers = self._image_readers()
        return [FieldViolation(field, no_images(m, readers) + suffix) for field, m in found]

    def _image_readers(self) -> list[str]:
        """The models this agent is configured with that read images: pinned, endpoint
        and local ones, and the first model of each provider it holds a key for."""
        settings = self._settings
        specs = [*self._configured.values(), *endpoint_specs(settings.endpoints)]
        ids = [s.id for s in specs if s.vision]
        ids += [f"{LOCAL_PREFIX}{name}" for name in settings.local_models]
        ids += [
            p.alone[0] for p in registry.KEYED if p.alone and settings.credentials.key(p.credential)
        ]
        return list(dict.fromkeys(ids))


def needs_scores(request: GenerationRequest) -> bool:
    """Whether the variants are scored: only when someone uses the score, never for a
    client that would drop it (a score costs renders and OCR on the tool workers). Today
    that is the client showing it (`score_fidelity`). Refinement towards the screenshot,
    which scores every round (`refine_rounds`), needs no such event: the rounds are
    scored inside the variant, and their last score is reused for these."""
    return request.score_fidelity


def refine_rounds(
    request: GenerationRequest, settings: AgentSettings, images: tuple[InputImage, ...]
) -> int:
    """The rounds each variant may take towards the input images: the request's number,
    else the operator's default, at most S2C_REFINE_MAX_ROUNDS; none without images, and
    none for an update: it asks for a change away from the screenshot, which a round
    towards it would undo."""
    if not images or request.generation_type != "create":
        return 0
    asked = settings.refine_rounds if request.refine_rounds is None else request.refine_rounds
    return max(0, min(asked, settings.refine_max_rounds))


def tool_context(
    request: GenerationRequest,
    images: tuple[InputImage, ...],
    max_project_bytes: int = 0,
    max_project_files: int = 0,
) -> ToolContext:
    return ToolContext(
        input_images=images,
        option_codes=request.option_codes,
        image_generation_enabled=request.image_generation_enabled,
        asset_extraction_enabled=request.asset_extraction_enabled,
        credentials=request.credentials,
        asset_base_url=request.asset_base_url,
        viewport_widths=page_plan(len(request.prompt.images), request.prompt.image_meta).widths,
        max_project_bytes=max_project_bytes,
        max_project_files=max_project_files,
        owner=request.generation_id,
        build=build_of(request.stack),
    )
