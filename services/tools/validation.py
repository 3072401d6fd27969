"""Tool arguments checked against the tool's canonical JSON Schema before the tool runs.

The validator covers the subset of JSON Schema our definitions use: `type` (a name or a
list of names, so `["string", "null"]` makes a value nullable), `properties`, `required`,
`items`, `enum` and `additionalProperties` (a boolean or a schema); `description`,
`default` and `title` are annotations. Anything else in a schema is refused up front
(`unsupported_keywords`), so a definition can never silently claim a check we do not make.
JSON numbers arrive from a protobuf Struct as floats, so `2.0` is an integer and booleans
are never numbers.

`null` counts as "absent" for a property that is not required: OpenAI's strict schemas
send null for every optional field the model leaves out.

Ordering rule (`check_arguments`, called by the runtime after its INVALID_JSON, unknown
tool and disabled-tool checks and before the handler):

1. Upstream's handlers check some arguments themselves, with texts the model and the
   browser already know ("create_file requires non-empty content", "edits must be a
   list", "generate_images requires a non-empty prompts list", …), and some of them are
   deliberately lenient there (aliases such as edit_image's `images`, numbers sent as
   strings, a falsy `edits` meaning the single-edit form). Such a location is *handler
   checked* (`HANDLER_CHECKED`): a violation exactly there (missing, wrong type) is the
   handler's to answer or to forgive. Only the location itself is the handler's; what is
   nested below it (e.g. each prompt in `prompts`) is the schema's, because there the
   handlers would crash, silently drop the item, or coerce a list into text.
2. If every violation is handler-checked (or there is none), the handler runs: it answers
   in upstream's words exactly as before.
3. Otherwise the call is refused without running the tool, listing *every* violation,
   handler-checked ones included, so the model can fix the whole call in one go. Upstream
   text therefore still wins in every case where the schema and upstream's own checks
   could both apply to one argument; it gives way only when some other argument is
   broken in a way the handler would not have reported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from services.tools.types import ToolOutcome

__all__ = [
    "HANDLER_CHECKED",
    "MAX_REPORTED",
    "SUPPORTED_KEYWORDS",
    "Violation",
    "check_arguments",
    "handler_checked",
    "invalid_arguments",
    "unsupported_keywords",
    "validate",
]

SUPPORTED_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "items",
        "enum",
        "additionalProperties",
        "description",
        "default",
        "title",
    }
)
# Past this, more detail only buries the first problems (a 10 000-item list of numbers).
MAX_REPORTED = 20
_SHOWN_VALUE_CHARS = 60

# JSON pointers, "*" standing for any array index: see the ordering rule above.
HANDLER_CHECKED: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "create_file": frozenset({"/content"}),
        "edit_file": frozenset(
            {"/old_text", "/count", "/edits", "/edits/*/old_text", "/edits/*/count"}
        ),
        "generate_images": frozenset({"/prompts"}),
        "remove_background": frozenset({"/image_urls"}),
        "edit_image": frozenset({"/prompt", "/image_urls"}),
        "extract_assets": frozenset({"/asset_descriptions"}),
        "save_assets": frozenset({"/asset_ids"}),
        "retrieve_option": frozenset({"/option_number"}),
        "compare_with_reference": frozenset({"/image_number"}),
        "check_accessibility": frozenset({"/viewport_width"}),
    }
)


_Path = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Violation:
    pointer: str  # RFC 6901 JSON pointer of the offending (or missing) value; "" is the root
    message: str
    # The same location unescaped, telling array indices from digit-named properties.
    path: _Path = field(default=(), compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.pointer or '(root)'}: {self.message}"

    def as_json(self) -> dict[str, str]:
        return {"pointer": self.pointer, "message": self.message}


def validate(schema: Mapping[str, Any], value: Any) -> list[Violation]:
    """Every way `value` breaks `schema`, in a stable order (schema property order)."""
    found: list[Violation] = []
    _check(schema, value, (), found)
    return found


def unsupported_keywords(schema: Mapping[str, Any]) -> set[str]:
    """Keywords anywhere in `schema` that `validate` does not understand."""
    unknown: set[str] = set()
    stack: list[Mapping[str, Any]] = [schema]
    while stack:
        node = stack.pop()
        unknown |= set(node) - SUPPORTED_KEYWORDS
        unknown |= {f"type: {name}" for name in _types(node) if name not in _TYPE_NAMES}
        stack.extend(node.get("properties", {}).values())
        for key in ("items", "additionalProperties"):
            sub = node.get(key)
            if isinstance(sub, Mapping):
                stack.append(sub)
    return unknown


def handler_checked(tool: str, violation: Violation) -> bool:
    """Whether the tool's handler answers for this location itself (ordering rule, 1)."""
    patterns = HANDLER_CHECKED.get(tool, frozenset())
    generic = "".join("/*" if isinstance(part, int) else _escape(part) for part in violation.path)
    return generic in patterns


def check_arguments(
    tool: str, schema: Mapping[str, Any] | None, arguments: Mapping[str, Any]
) -> ToolOutcome | None:
    """The runtime hook: an error outcome when the call must not run, else None."""
    if schema is None:
        return None
    violations = validate(schema, arguments)
    if all(handler_checked(tool, v) for v in violations):
        return None
    return invalid_arguments(tool, violations)


def invalid_arguments(tool: str, violations: Sequence[Violation]) -> ToolOutcome:
    shown = list(violations[:MAX_REPORTED])
    text = "; ".join(str(v) for v in shown)
    if len(violations) > len(shown):
        text += f"; and {len(violations) - len(shown)} more"
    return ToolOutcome(
        False,
        {
            "error": f"Invalid arguments for {tool}: {text}",
            "INVALID_ARGUMENTS": [v.as_json() for v in shown],
        },
        {"error": "Invalid arguments"},
    )


# -- the checks ----------------------------------------------------------------------------


def _check(schema: Mapping[str, Any], value: Any, path: _Path, found: list[Violation]) -> None:
    allowed = _types(schema)
    if allowed and not any(_is_type(name, value) for name in allowed):
        # Nothing below a wrongly typed value can be judged meaningfully.
        found.append(_violation(path, f"expected {_either(allowed)}, got {_type_name(value)}"))
        return
    enum = schema.get("enum")
    if enum is not None and not any(_json_equal(value, option) for option in enum):
        options = ", ".join(_show(option) for option in enum)
        found.append(_violation(path, f"must be one of {options}; got {_show(value)}"))
    if isinstance(value, dict):
        _check_object(schema, value, path, found)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                _check(items, item, (*path, index), found)


def _check_object(
    schema: Mapping[str, Any], value: dict[str, Any], path: _Path, found: list[Violation]
) -> None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    required: Iterable[str] = schema.get("required", ())
    required_set = set(required)
    for name in required:
        if value.get(name) is None and not (name in value and _nullable(properties.get(name))):
            message = "is required" if name not in value else "is required and may not be null"
            found.append(_violation((*path, name), message))
    for name, sub in properties.items():
        if name not in value:
            continue
        item = value[name]
        if item is None and (name not in required_set or not _nullable(sub)):
            continue  # absent when optional; already reported when required
        _check(sub, item, (*path, name), found)
    extra = schema.get("additionalProperties")
    if extra is None or extra is True:
        return
    for name, item in value.items():
        if name in properties or item is None:
            continue
        if extra is False:
            allowed = ", ".join(properties) or "none"
            found.append(
                _violation((*path, name), f"is not allowed (allowed properties: {allowed})")
            )
        elif isinstance(extra, Mapping):
            _check(extra, item, (*path, name), found)


_TYPE_NAMES = ("null", "boolean", "integer", "number", "string", "array", "object")


def _violation(path: _Path, message: str) -> Violation:
    pointer = "".join(f"/{part}" if isinstance(part, int) else _escape(part) for part in path)
    return Violation(pointer, message, path)


def _escape(name: str) -> str:
    return "/" + name.replace("~", "~0").replace("/", "~1")


def _types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if declared is None:
        return []
    return [declared] if isinstance(declared, str) else list(declared)


def _nullable(schema: Mapping[str, Any] | None) -> bool:
    return schema is not None and "null" in _types(schema)


def _is_type(name: str, value: Any) -> bool:
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    if isinstance(value, bool):
        return False
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    raise ValueError(f"unsupported JSON Schema type: {name!r}")


def _type_name(value: Any) -> str:
    for name in _TYPE_NAMES:
        if _is_type(name, value):
            return name
    if isinstance(value, float):
        return "non-finite number"
    return type(value).__name__


def _either(names: Sequence[str]) -> str:
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " or " + names[-1]


def _json_equal(a: Any, b: Any) -> bool:
    # Python's True == 1 is not JSON's: a boolean only ever equals a boolean.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | dict) or isinstance(b, list | dict):
        return False
    return bool(a == b)


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=True, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > _SHOWN_VALUE_CHARS:
        text = text[: _SHOWN_VALUE_CHARS - 3] + "..."
    return text
