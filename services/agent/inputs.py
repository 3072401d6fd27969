"""A request's still input images, prepared once for its plan (planning.py).

Each image is parsed once (`services/common/input_images.py`), tagged with the page and
width it shows, and checked against the image budget from its header, before any model
or tool sees it. The plan carries the result; the providers, the tool calls and the live
score read it and never parse a data URL again.
"""

from __future__ import annotations

from services.agent.domain import GenerationRequest
from services.agent.pages import page_plan
from services.common.errors import FieldViolation
from services.common.images import ImageLimits, ImageTooLarge, check
from services.common.input_images import InputImage, parse_input_image
from services.common.tool_types import ImageTag


def prepare_images(
    request: GenerationRequest, limits: ImageLimits
) -> tuple[tuple[InputImage, ...], list[FieldViolation]]:
    """Every still input image (`input_images` order, repeats once), parsed and tagged;
    and the violations of those none could decode within `limits` or that do not parse.

    An image whose header cannot be read is not refused here: the providers say so.
    Blocking (base64 and SHA-256 of every image): the servicer runs it in a thread.
    """
    fields = dict(_fields(request))
    tags = image_tags(request)
    images: list[InputImage] = []
    violations: list[FieldViolation] = []
    for url, tag in zip(input_images(request), tags, strict=True):
        try:
            image = parse_input_image(url, tag)
        except ValueError as exc:
            violations.append(FieldViolation(fields[url], f"not an image data URL: {exc}"))
            continue
        try:
            check(image.data, limits)
        except ImageTooLarge as exc:
            violations.append(FieldViolation(fields[url], exc.message))
            continue
        except ValueError:
            pass  # unreadable header: for the providers to report
        images.append(image)
    return tuple(images), violations


def _fields(request: GenerationRequest) -> list[tuple[str, str]]:
    # Reversed, so the dict built from it names an image by its first place.
    out = [(url, f"prompt.images[{i}]") for i, url in enumerate(request.prompt.images)]
    for j, message in enumerate(request.history):
        out += [(url, f"history[{j}].images[{i}]") for i, url in enumerate(message.images)]
    return out[::-1]


def image_tags(request: GenerationRequest) -> tuple[ImageTag, ...]:
    """What each of `input_images(request)` shows, aligned with them: the page and width
    of its tag; a history image, or an untagged one, the entry page at no said width."""
    prompt = request.prompt
    tags: dict[str, ImageTag] = {}
    for page in page_plan(len(prompt.images), prompt.image_meta).pages:
        for i in page.images:
            width = prompt.image_meta[i].viewport_width if i < len(prompt.image_meta) else None
            tags.setdefault(prompt.images[i], ImageTag(page.path, width or 0))
    return tuple(tags.get(image, ImageTag()) for image in input_images(request))


def input_images(request: GenerationRequest) -> tuple[str, ...]:
    """Still images the tools may use: the prompt's and every user history message's."""
    images = list(request.prompt.images)
    for message in request.history:
        if message.role == "user":
            images.extend(message.images)
    seen: dict[str, None] = dict.fromkeys(i for i in images if i.startswith("data:image/"))
    return tuple(seen)
