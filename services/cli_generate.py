"""`s2c generate`: one generation over gRPC from the shell, each variant's HTML written out."""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import mimetypes
import sys
from pathlib import Path

import grpc
from google.protobuf import json_format
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.common.errors import bad_request_violations
from services.common.grpc_server import CHANNEL_OPTIONS
from services.gateway.params import STACKS

IMAGE_TYPES = {"image/png", "image/jpeg", "image/webp", "image/gif"}


def build_request(args: argparse.Namespace) -> pb.GenerateCodeRequest:
    if args.stack not in STACKS:
        raise SystemExit(f"s2c: unknown stack {args.stack!r}; one of: {', '.join(STACKS)}")
    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_CREATE,
        stack=STACKS[args.stack],
        variant_count=args.variants,
        models=args.model,
    )
    path = Path(args.input)
    if path.is_file():
        mime = mimetypes.guess_type(path.name)[0] or ""
        if mime not in IMAGE_TYPES:
            raise SystemExit(f"s2c: {path} is not a png, jpeg, webp or gif image")
        data = base64.b64encode(path.read_bytes()).decode()
        request.input_mode = pb.INPUT_MODE_IMAGE
        request.prompt.images.append(f"data:{mime};base64,{data}")
    else:
        request.input_mode = pb.INPUT_MODE_TEXT
        request.prompt.text = args.input
    return request


def generate(args: argparse.Namespace) -> int:
    """Runs the generation, writes `variant-N.html` into --out; the exit code is the outcome."""
    request = build_request(args)
    codes, error, code = asyncio.run(_stream(request, args))
    if code:
        return code
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for index, html in sorted(codes.items()):
        target = out / f"variant-{index + 1}.html"
        target.write_text(html)
        if not args.json:
            print(f"wrote {target}")
    if error:
        print(f"s2c: generation failed: {error}", file=sys.stderr)
        return 1
    return 0 if codes else 1


async def _stream(
    request: pb.GenerateCodeRequest, args: argparse.Namespace
) -> tuple[dict[int, str], str, int]:
    codes: dict[int, str] = {}
    error = ""
    async with grpc.aio.insecure_channel(args.agent, options=list(CHANNEL_OPTIONS)) as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        try:
            async for event in stub.GenerateCode(request):
                if args.json:
                    line = json_format.MessageToDict(event, preserving_proto_field_name=True)
                    print(json.dumps(line, ensure_ascii=False), flush=True)
                kind = event.WhichOneof("payload")
                v = event.variant_index
                if kind == "code_snapshot":
                    codes[v] = event.code_snapshot.content
                elif kind == "generation_error":
                    error = event.generation_error.message
                if not args.json:
                    _progress(event, kind)
        except grpc.aio.AioRpcError as exc:
            violations = bad_request_violations(exc)
            detail = "; ".join(f"{x.field}: {x.description}" for x in violations)
            print(f"s2c: {exc.code().name}: {detail or exc.details()}", file=sys.stderr)
            return codes, error, 2
    return codes, error, 0


def _progress(event: pb.GenerationEvent, kind: str | None) -> None:
    v = event.variant_index + 1
    if kind == "variant_count":
        models = ", ".join(event.variant_count.models)
        print(f"{event.variant_count.count} variants: {models}")
    elif kind == "tool_start":
        print(f"[variant {v}] {event.tool_start.name} …")
    elif kind == "tool_result":
        state = "ok" if event.tool_result.ok else "failed"
        print(f"[variant {v}] {event.tool_result.name} {state}")
    elif kind == "variant_complete":
        print(f"[variant {v}] complete")
    elif kind == "variant_error":
        print(f"[variant {v}] error: {event.variant_error.message}")
