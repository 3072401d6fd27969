"""Text building blocks of the user messages.

Several sentences here are matched verbatim by clients and tests (the image
policy lines, the create openers, the stack line), so change them only together
with `tests/agent/test_prompts.py`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from services.agent.prompts.versions import Shown

DEFAULT_FILE_PATH = "index.html"

IMAGE_GENERATION_ON = (
    "Image generation is enabled for this request. "
    "Use generate_images for missing assets when needed."
)
# Upstream's "off" line also says "Do not call generate_images."; ours never names a tool
# the model is not offered (and with generation off, generate_images is never offered).
IMAGE_GENERATION_OFF = (
    "Image generation is disabled for this request. "
    "Use provided media, CSS effects, or placeholder URLs (https://placehold.co)."
)
# Generation is on, but no image generator is offered (no Replicate key).
IMAGE_GENERATION_UNAVAILABLE = (
    "Image generation is not available for this request. "
    "Use provided media, CSS effects, or placeholder URLs (https://placehold.co)."
)

IMAGE_CREATE_OPENER = (
    "Generate code for a web page that looks exactly like the provided screenshot(s)."
)
VIDEO_CREATE_OPENER = "Analyze this video and generate the code."
DEFAULT_CHANGE_REQUEST = "Apply the requested update."


def image_policy(enabled: bool, offered: bool) -> str:
    """The policy line for a request with generation `enabled` and `generate_images`
    `offered` (it never is while generation is disabled)."""
    if not enabled:
        return IMAGE_GENERATION_OFF
    return IMAGE_GENERATION_ON if offered else IMAGE_GENERATION_UNAVAILABLE


def stack_line(stack: str) -> str:
    return f"Selected stack: {stack}."


def design_system_block(content: str) -> str:
    """The design-system section, or "" when there is none."""
    body = content.strip()
    if not body:
        return ""
    return (
        "## Design system\n\n"
        "If the design system conflicts with any other instruction here, the design "
        "system wins.\n\n"
        f"<design_system>\n{body}\n</design_system>"
    )


def asset_id_block(ids: Sequence[str | None]) -> str:
    """Lists uploaded images by asset id and tells the model how to use them.

    `ids[k]` belongs to image k+1 of the message; None marks an image that could
    not be staged, so numbering keeps matching the order the model sees them in.
    Returns "" when no image has an id.
    """
    lines = [f"- Image {k}: asset_id `{asset_id}`" for k, asset_id in enumerate(ids, 1) if asset_id]
    if not lines:
        return ""
    return "\n".join(
        [
            "## Uploaded image asset IDs",
            *lines,
            "",
            "Decide for each uploaded image whether it is only a reference screenshot or a "
            "real asset meant to appear on the page (a logo, product photo, icon, background "
            "or illustration).",
            "- To use one as an asset, call `save_assets` with its id in the asset_ids list "
            "before writing the code that needs it, then reference the permanent "
            "`public_url` that save_assets returns.",
            "- Never write an asset id, a temporary file path or a temporary URL into the code.",
            "- Do not place a screenshot on the page as an image unless the user clearly "
            "wants that.",
            "- If you used any uploaded asset, say so in a few words in your final message.",
        ]
    )


def append_block(text: str, block: str) -> str:
    """Appends a block after a blank line; a blank `text` yields just the block."""
    if not block:
        return text
    return f"{text}\n\n{block}".strip()


def join_sections(*sections: str) -> str:
    """Joins the non-blank sections with blank lines."""
    return "\n\n".join(section for section in sections if section.strip())


def wrap_file(code: str, path: str = DEFAULT_FILE_PATH) -> str:
    """Wraps earlier generated code so the model reads it as file content, not chat."""
    body = code.strip()
    if body.startswith("<file") and body.endswith("</file>"):
        return body
    return f'<file path="{path}">\n{body}\n</file>'


def version_text(number: int, path: str, code: str, shown: Shown) -> str:
    """What stands for version `number` of the file in a replayed history.

    Each text depends only on the versions up to it (`versions.plan`), so a request's
    history is a prefix of the next update's (provider prompt caches).
    """
    path = path or DEFAULT_FILE_PATH
    if shown.kind == "elided":
        return (
            f"[version {number} of {path}, {len(code.strip()):,} characters — "
            "superseded by a later version shown in full, not repeated here]"
        )
    if shown.kind == "full":
        return f"[version {number} of {path}, in full]\n" + wrap_file(code, path)
    if not shown.edits:
        return f"[version {number} of {path}: the same as version {number - 1}]"
    edits = "\n".join(
        f"<edit>\n<old_text>\n{old}</old_text>\n<new_text>\n{new}</new_text>\n</edit>"
        for old, new in shown.edits
    )
    return (
        f"[version {number} of {path}: version {number - 1} with these replacements, "
        f"applied in order]\n{edits}"
    )


def current_version_note(number: int, path: str, tools: Collection[str]) -> str:
    """Points an update at version `number` above as the file to change."""
    with_tool = " with `edit_file`" if "edit_file" in tools else ""
    path = path or DEFAULT_FILE_PATH
    return (
        f"The current source of {path} is version {number} above: the last version "
        "shown in full with the replacements of every later version applied in order. "
        f"Apply the change request above to it{with_tool}; any text you replace must "
        "match that current source exactly."
    )


def current_file_block(path: str, content: str, tools: Collection[str]) -> str:
    """The current file, once, at the end of an update from history."""
    with_tool = " with `edit_file`" if "edit_file" in tools else ""
    path = path or DEFAULT_FILE_PATH
    return (
        f"The current source of {path} is below; apply the change request above to it"
        f"{with_tool}.\n\n"
        f'<current_file path="{path}">\n{content}\n</current_file>'
    )


def image_create_text(
    *, stack: str, design_system: str, policy: str, tools: Collection[str], extra: str
) -> str:
    """`policy` is the image policy line; `tools` the offered tools, so each bullet that
    names a tool appears only when the model has it."""
    instructions = join_sections(
        IMAGE_CREATE_OPENER,
        stack_line(stack),
        design_system_block(design_system),
        "## Replication instructions\n"
        + "".join(f"- {b}\n" for b in _replication(tools))
        + f"- {policy}",
        "## Multiple screenshots\n"
        "- Screenshots of different pages become separate pages linked to each other.\n"
        "- Screenshots of tabs or views of one screen become views with navigation "
        "between them.\n"
        "- Screenshots that have nothing to do with each other go into a simple scaffold "
        "with one section per screenshot, labelled Screenshot 1, Screenshot 2, and so on.\n"
        "- Render mobile screenshots as the app itself, without a device frame or "
        "browser chrome.",
    )
    extra = extra.strip()
    if extra:
        instructions += f"\n\nAdditional instructions: {extra}"
    return instructions


def _replication(tools: Collection[str]) -> list[str]:
    extract = "extract_assets" in tools
    generate = "generate_images" in tools
    bullets = ["Match the screenshot exactly, and use exactly the text it shows."]
    if extract:
        bullets += [
            "Reuse the real assets from the screenshot wherever they can be extracted"
            + (", and generate only the ones that cannot." if generate else "."),
            "Call `extract_assets` for those assets, then look closely at every crop it returns.",
        ]
        if "edit_image" in tools:
            bullets.append(
                "If a crop is low-resolution or pixelated, or contains something that does "
                "not belong to the asset, clean it up with `edit_image`."
            )
    if generate:
        bullets.append(
            "Create whatever cannot be extracted with `generate_images`."
            if extract
            else "Create the images the page needs with `generate_images`."
        )
    return bullets


def text_create_text(*, description: str, stack: str, design_system: str, policy: str) -> str:
    description = description.strip()
    ending = "" if description.endswith((".", "!", "?")) else "."
    return join_sections(
        f"Generate UI for {description}{ending}",
        stack_line(stack),
        design_system_block(design_system),
        "# Instructions\n"
        "- Make it look modern, polished and sleek.\n"
        "- Choose professional fonts and a coherent colour palette.\n"
        "- Follow established UX practice for layout, spacing and interaction.\n"
        f"- {policy}",
    )


def video_create_text(*, stack: str, design_system: str, policy: str, extra: str) -> str:
    instructions = join_sections(
        "The video is a screen recording of an app in use. Rebuild that app so the same "
        "interactions lead to the same results.\n"
        "- Watch the entire recording before writing any code.\n"
        "- Match colours, sizes and fonts exactly.\n"
        f"- {policy}\n"
        "- Fake any backend calls with in-page data.\n"
        "- The app has to work, not just look right: implement its behaviour in JavaScript.\n"
        "- Use SVG or 3D elements where the recording calls for them.",
        VIDEO_CREATE_OPENER,
        stack_line(stack),
        design_system_block(design_system),
    )
    extra = extra.strip()
    if extra:
        instructions += f"\n\nAdditional instructions: {extra}"
    return instructions


def update_prefix(*, stack: str, design_system: str, policy: str) -> str:
    """What the first user message of an update is prefixed with."""
    return join_sections(stack_line(stack), policy, design_system_block(design_system))


def snapshot_update_text(
    *,
    prefix: str,
    path: str,
    content: str,
    change_request: str,
    tools: Collection[str],
    others: str = "",
) -> str:
    """`others`: the project's other files (pages_text.other_files_block), if any."""
    with_tool = " with `edit_file`" if "edit_file" in tools else ""
    others = f"{others}\n\n" if others else ""
    return (
        f"{prefix}\n\n"
        "The page already exists; its current source is below. Apply the change request "
        f"to it{with_tool}.\n\n"
        f'<current_file path="{path}">\n{content}\n</current_file>\n\n'
        f"{others}"
        f"<change_request>\n{change_request}\n</change_request>"
    )
