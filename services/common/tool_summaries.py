"""The short input summaries the browser shows while a tool runs (`toolStart.input`).

Shapes follow the upstream UI, which reads specific keys per tool (`prompts`,
`image_urls`, `asset_descriptions`, …); unknown tools get their raw arguments.
"""

from __future__ import annotations

from typing import Any

CREATE_PREVIEW_CHARS = 200
EDIT_TEXT_CHARS = 160


def summarize_text(v: str, n: int) -> str:
    """`v` itself when it has at most `n` characters, else its first `n` plus "..."."""
    return v if len(v) <= n else v[:n] + "..."


def summarize_tool_input(name: str, args: dict[str, Any], file_path: str | None) -> dict[str, Any]:
    """The summary of a tool call's arguments for the UI; never raises on odd arguments."""
    if name == "create_file":
        content = _text(args.get("content"))
        return {
            "path": _text(args.get("path")) or file_path,
            "contentLength": len(content),
            "preview": summarize_text(content, CREATE_PREVIEW_CHARS),
        }
    if name == "edit_file":
        return {"path": _text(args.get("path")) or file_path, "edits": _edit_summaries(args)}
    if name == "generate_images":
        prompts = args.get("prompts")
        if isinstance(prompts, list):
            return {"count": len(prompts), "prompts": [_text(p) for p in prompts]}
        return dict(args)
    if name == "remove_background":
        return _counted_list("image_urls", args.get("image_urls"))
    if name == "edit_image":
        urls = args.get("image_urls") or args.get("images")
        prompt = args.get("prompt")
        if isinstance(urls, list):
            return {
                "count": len(urls),
                "prompt": prompt,
                "image_urls": urls,
                "aspect_ratio": args.get("aspect_ratio"),
            }
        return {"prompt": prompt, "image_urls": []}
    if name == "extract_assets":
        descriptions = args.get("asset_descriptions") or args.get("descriptions")
        return _counted_list("asset_descriptions", descriptions)
    if name == "save_assets":
        return _counted_list("asset_ids", args.get("asset_ids"))
    if name == "retrieve_option":
        return {
            "option_number": _whole(args.get("option_number")),
            "index": _whole(args.get("index")),
        }
    return dict(args)


def _edit_summaries(args: dict[str, Any]) -> list[dict[str, Any]]:
    edits = args.get("edits")
    items: list[Any] = edits if isinstance(edits, list) and edits else [args]
    summaries = []
    for item in items:
        edit = item if isinstance(item, dict) else {}
        summaries.append(
            {
                "old_text": summarize_text(_text(edit.get("old_text")), EDIT_TEXT_CHARS),
                "new_text": summarize_text(_text(edit.get("new_text")), EDIT_TEXT_CHARS),
                "count": _whole(edit.get("count")),
            }
        )
    return summaries


def _counted_list(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, list):
        return {"count": len(value), key: value}
    return {key: []}


def _text(value: Any) -> str:
    # Arguments arrive from model JSON: null means absent and a stray number is still shown.
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _whole(value: Any) -> Any:
    # Struct values carry every number as a double; show 2, not 2.0.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
