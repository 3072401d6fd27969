"""Tool results: run records and captures as MCP content (text, the files as embedded
resources, images), with the same facts as `structuredContent` for programs."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, unquote

from mcp.server.mcpserver.exceptions import ResourceError
from mcp_types import (
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2 as cpb

URI_TEMPLATE = "s2c://generations/{generation_id}/{option}/{path}"
MIME_TYPES = {".html": "text/html", ".css": "text/css", ".js": "text/javascript"}


def file_uri(generation_id: str, option: int, path: str) -> str:
    # A project path may hold `/`; encoded, it stays one segment of the template.
    return f"s2c://generations/{generation_id}/{option}/{quote(path, safe='')}"


def mime_type(path: str) -> str:
    return next((m for ext, m in MIME_TYPES.items() if path.endswith(ext)), "text/plain")


def status_name(status: int) -> str:
    return pb.RunStatus.Name(status).removeprefix("RUN_STATUS_").lower()


def files_of(variant: pb.VariantRecord) -> list[cpb.FileState]:
    if variant.files:
        return list(variant.files)
    if variant.code:
        return [cpb.FileState(path="index.html", content=variant.code)]
    return []


def usage_json(usage: cpb.Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "cached_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
        # null, never 0, for a model without a price (the demo, local servers).
        "cost_usd": usage.cost_usd if usage.priced else None,
        "priced": usage.priced,
    }


def fidelity_json(score: cpb.Fidelity) -> dict[str, Any]:
    metrics = ("block_match", "text", "position", "color", "visual")
    out: dict[str, Any] = {"path": score.path or "index.html", "image_index": score.image_index}
    out.update({m: getattr(score, m) for m in metrics if score.HasField(m)})
    if score.unavailable_reason:
        out["unavailable_reason"] = score.unavailable_reason
    return out


def record_json(record: pb.Generation) -> dict[str, Any]:
    """The run record as a calling agent reads it: per option, files (by resource URI),
    cost and fidelity."""
    options = []
    for variant in record.variants:
        options.append(
            {
                "option": variant.variant_index,
                "model": variant.model,
                "status": status_name(variant.status),
                "error": variant.error,
                "files": [
                    {
                        "path": f.path,
                        "bytes": len(f.content.encode("utf-8")),
                        "uri": file_uri(record.generation_id, variant.variant_index, f.path),
                    }
                    for f in files_of(variant)
                ],
                "usage": usage_json(variant.usage),
                "fidelity": [fidelity_json(s) for s in variant.fidelity],
            }
        )
    return {
        "generation_id": record.generation_id,
        "status": status_name(record.status),
        "error": record.error,
        "options": options,
    }


def generation_result(
    record: pb.Generation, previews: dict[int, str], *, with_files: bool, ran: bool
) -> CallToolResult:
    """The record as text and structured content, each option's files embedded (when
    `with_files`) and each option's rendered page as an image when one was taken. A
    generation this call `ran` that did not complete is a tool error (with each option's
    reason); a record only read is the answer whatever it says."""
    summary = record_json(record)
    content: list[ContentBlock] = [TextContent(type="text", text=_headline(summary))]
    content.append(TextContent(type="text", text=json.dumps(summary, ensure_ascii=False)))
    for variant in record.variants if with_files else ():
        for f in files_of(variant):
            uri = file_uri(record.generation_id, variant.variant_index, f.path)
            resource = TextResourceContents(uri=uri, mime_type=mime_type(f.path), text=f.content)
            content.append(EmbeddedResource(type="resource", resource=resource))
        preview = previews.get(variant.variant_index)
        if preview is not None:
            mime, _, data = preview.removeprefix("data:").partition(";base64,")
            content.append(ImageContent(type="image", data=data, mime_type=mime))
    failed = ran and record.status != pb.RUN_STATUS_COMPLETED
    return CallToolResult(content=content, structured_content=summary, is_error=failed)


def _headline(summary: dict[str, Any]) -> str:
    lines = [f"Generation {summary['generation_id']}: {summary['status']}"]
    if summary["error"]:
        lines[0] += f" ({summary['error']})"
    for option in summary["options"]:
        cost = option["usage"]["cost_usd"]
        shown = "unpriced" if cost is None else f"${cost:.4f}"
        paths = ", ".join(f["path"] for f in option["files"]) or "no files"
        line = (
            f"- option {option['option']} ({option['model']}): {option['status']}, {paths}, {shown}"
        )
        if option["error"]:
            line += f": {option['error']}"
        lines.append(line)
    lines.append("Files: read them as resources s2c://generations/{id}/{option}/{path}.")
    return "\n".join(lines)


def file_from_record(record: pb.Generation, option: str, path: str) -> str:
    """One file of a record; ResourceError naming what is missing."""
    wanted = unquote(path)
    for variant in record.variants:
        if str(variant.variant_index) != option:
            continue
        for f in files_of(variant):
            if f.path == wanted:
                return f.content
        raise ResourceError(f"option {option} of {record.generation_id} has no file {wanted!r}")
    raise ResourceError(f"generation {record.generation_id} has no option {option!r}")
