"""GenerationEvents → the upstream browser frames, with the live-preview policy.

Per variant it keeps the current code, applies `code_delta`s, and sends whole
`setCode` frames (what the upstream UI expects) only as often as the policy
allows; the latest state is always flushed before tool frames, completion and
close. A client that asked for append-only code (`codeStream: "append"`, our UI) gets
`appendCode` frames with only the text it has not seen, and a whole `setCode` only when
the file it holds is replaced. A project of several files (a site of several pages) is
its entry page as that code (a built project's `dist/index.html`, else `index.html`, else
the first page written: all the upstream UI knows) plus our own `setFile` frames, each the
whole content of one other file by path, sent as that file is written (not streamed). The
thinking/assistant deltas of one message in one batch go out as one frame: the agent's
event-log tick already paces them, so no window of our own is added.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf import json_format, struct_pb2
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2

from services.common.accessibility_view import accessibility_frame
from services.common.react_project import BUILT_PATH
from services.gateway.preview_policy import AppendPolicy, PreviewPolicyConfig, SetCodePolicy
from services.gateway.score_frames import changes_frame, fidelity_frame

# A site's shared stylesheets and scripts: never its entry page, even when written first.
# Files a page loads, never a page itself; a react_vite project's sources likewise.
_SHARED_SUFFIXES = (".css", ".js", ".ts", ".tsx", ".jsx", ".json")

Frame = dict[str, Any]

# A change due within this is due now when a timer fires. The gateway runs on uvloop,
# whose timers fire up to ~1.5 ms early against time.monotonic() (its clock is the
# kernel's coarse monotonic clock, in milliseconds, and delays round to the millisecond):
# held to the exact time, the relay's timer loop woke again and again, sending nothing,
# until the clock caught up (31 % extra wake-ups per timer on average, up to 46 for one).
TIMER_SLACK_S = 0.002


def frame(kind: str, variant_index: int | None, **fields: Any) -> Frame:
    out: Frame = {"type": kind}
    if variant_index is not None:
        out["variantIndex"] = variant_index
    out.update({k: v for k, v in fields.items() if v is not None})
    return out


def _json(struct: struct_pb2.Struct) -> Any:
    return _ints(json_format.MessageToDict(struct))


def _ints(value: Any) -> Any:
    # Struct numbers are doubles; the UI (and upstream) speak in integer counts.
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


def _usage(usage: common_pb2.Usage) -> dict[str, Any]:
    # One model turn's tokens and cost (the proto's per-turn span): the UI sums them.
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheReadTokens": usage.cache_read_tokens,
        "cacheWriteTokens": usage.cache_write_tokens,
        "totalTokens": usage.total_tokens,
        "costUsd": usage.cost_usd,
        "priced": usage.priced,
    }


@dataclass
class _VariantCode:
    policy: SetCodePolicy
    parts: list[str] = field(default_factory=list)
    length: int = 0
    dirty: bool = False
    due: float | None = None  # when the pending change may go out (cached: hot path)
    # Append mode only: the client holds `text()[:shown]` while `known`; once the file
    # changed under what it holds (or, on a resume, nobody knows what it holds) the next
    # frame must be a whole setCode.
    appends: AppendPolicy | None = None
    shown: int = 0
    known: bool = True
    # The sequence of the latest event in the code: a resumable client's code frames carry
    # it, so the `afterSequence` it re-attaches with covers the code it holds.
    seq: int = 0

    def apply(self, seq: int, offset: int, text: str) -> None:
        self.seq = seq
        if offset < self.length:
            code = "".join(self.parts)[:offset]
            self.parts, self.length = [code], len(code)
        self.parts.append(text)
        self.length += len(text)
        self.dirty = True

    def replace(self, seq: int, content: str) -> None:
        self.seq = seq
        self.parts, self.length, self.dirty = [content], len(content), True

    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""


@dataclass
class _PendingDelta:
    kind: str
    variant_index: int
    event_id: str
    parts: list[str]
    seq: int


class FrameBuilder:
    """Turns events into frames. Pure apart from the injected clock; the caller
    sends what `on_event` and `on_timer` return, calls `on_timer` after each batch of
    events (pending text is always due then) and at `next_due()`."""

    def __init__(
        self,
        config: PreviewPolicyConfig,
        clock: Callable[[], float],
        *,
        resumable: bool = False,
        append: bool = False,
        resumed: bool = False,
    ) -> None:
        # Resumable clients get the event sequence on every frame, so they can re-attach
        # from the highest one they saw; a resume re-sends the code whole.
        self._resumable = resumable
        self._append = append
        # A re-attached client holds code this builder never sent, perhaps less than the
        # code at the sequence it resumes from (a code frame still waiting for its
        # interval when the socket dropped): its first code frame is whole.
        self._resumed = resumed
        self._seq = 0
        self._config = config
        self._clock = clock
        self._code: dict[int, _VariantCode] = {}
        # Pending text per variant: variants interleave, and one shared buffer would
        # flush on every switch. Resumable clients get one shared buffer, so frames leave
        # in sequence order and `seq` stays a safe resume point.
        self._pending: dict[int, _PendingDelta] = {}
        # A project's files besides the entry page, per variant: path → content.
        self._files: dict[int, dict[str, str]] = {}
        self._entry: dict[int, str] = {}  # each variant's entry page, once known
        # Upstream sends variantModels after the status frames; hold it until then.
        self._models: Frame | None = None
        self.error: str | None = None

    def _variant(self, index: int) -> _VariantCode:
        code = self._code.get(index)
        if code is None:
            code = self._code[index] = _VariantCode(SetCodePolicy(self._config))
            if self._append:
                code.appends = AppendPolicy(self._config.append_interval_s)
                code.known = not self._resumed
        return code

    def next_due(self) -> float | None:
        times = [c.due for c in self._code.values() if c.due is not None]
        return min(times) if times else None

    def on_timer(self) -> list[Frame]:
        now = self._clock()
        out = [self._take_pending(key) for key in list(self._pending)]
        for index, code in self._code.items():
            if code.due is not None and code.due <= now + TIMER_SLACK_S:
                out.extend(self._send_code(index, code, now))
        return out

    def flush_all(self) -> list[Frame]:
        out = [self._take_pending(key) for key in list(self._pending)]
        for index in list(self._code):
            out.extend(self._flush_code(index))
        return out

    def _key(self, variant_index: int) -> int:
        return -1 if self._resumable else variant_index

    def on_event(self, event: pb.GenerationEvent) -> list[Frame]:
        kind = event.WhichOneof("payload")
        v = event.variant_index
        self._seq = event.sequence
        if kind in ("assistant_delta", "thinking_delta"):
            return self._delta("assistant" if kind == "assistant_delta" else "thinking", event)
        key = self._key(v)
        out = [self._take_pending(key)] if key in self._pending else []
        if self._models is not None and kind not in ("status", "variant_count"):
            out.append(self._models)
            self._models = None
        if kind == "code_delta" and not self._entry_write(v, event.code_delta.path, out):
            files = self._files.setdefault(v, {})
            old = files.get(event.code_delta.path, "")
            files[event.code_delta.path] = old[: event.code_delta.offset] + event.code_delta.text
        elif kind == "code_snapshot" and not self._entry_write(v, event.code_snapshot.path, out):
            path, content = event.code_snapshot.path, event.code_snapshot.content
            self._files.setdefault(v, {})[path] = content
            out.append(self._f("setFile", v, path=path, value=content))
        elif kind == "code_delta" and self._append:
            out.extend(self._append_delta(v, event.sequence, event.code_delta))
        elif kind == "code_snapshot" and self._append:
            out.extend(self._append_snapshot(v, event.sequence, event.code_snapshot.content))
        elif kind == "code_delta":
            code = self._variant(v)
            restart = event.code_delta.offset == 0
            code.apply(event.sequence, event.code_delta.offset, event.code_delta.text)
            now = self._clock()
            if code.length == 0:
                # A file restarted with nothing yet: `setCode ""` would blank the page on
                # show for a frame; its first text goes out at once. An empty file still
                # arrives as a code_snapshot.
                code.dirty, code.due = False, None
            elif (at := code.policy.on_change(now, code.length, restart=restart)) <= now:
                out.extend(self._set_code(v, code, now))
            else:
                code.due = at
        elif kind == "code_snapshot":
            code = self._variant(v)
            code.replace(event.sequence, event.code_snapshot.content)
            out.extend(self._set_code(v, code, self._clock()))
        elif kind == "tool_start":
            out.extend(self._flush_code(v))
            data = {"name": event.tool_start.name, "input": _json(event.tool_start.input)}
            out.append(self._f("toolStart", v, data=data, eventId=event.event_id or None))
        elif kind == "tool_result":
            out.extend(self._flush_code(v))
            result = event.tool_result
            data = {"name": result.name, "output": _json(result.output), "ok": result.ok}
            out.append(self._f("toolResult", v, data=data, eventId=event.event_id or None))
        elif kind == "variant_count":
            # The event names no variant; upstream's frame says variantIndex 0.
            count = event.variant_count
            out.append(self._f("variantCount", 0, value=str(count.count)))
            self._models = self._f("variantModels", 0, data={"models": list(count.models)})
        elif kind == "status":
            out.append(self._f("status", v, value=event.status.text))
        elif kind == "variant_complete":
            out.extend(self._flush_code(v))
            out.append(self._f("variantComplete", v, value="Variant generation complete"))
        elif kind == "variant_error":
            out.extend(self._flush_code(v))
            out.append(self._f("variantError", v, value=event.variant_error.message))
        elif kind == "generation_error":
            out.extend(self.flush_all())
            self.error = event.generation_error.message
        elif kind == "generation_complete":
            out.extend(self.flush_all())
        elif kind == "usage":
            # Our own frame (upstream sends none; its UI skips types it does not know).
            out.append(self._f("usage", v, data=_usage(event.usage)))
        elif kind == "fidelity":
            # Ours too: the variant's score against an input image (docs/eval.md).
            out.append(self._f("fidelity", v, data=fidelity_frame(event.fidelity)))
        elif kind == "accessibility":
            # Ours too: axe-core's check of the page at one width (docs/accessibility.md).
            out.append(self._f("accessibility", v, data=accessibility_frame(event.accessibility)))
        elif kind == "refine_round":
            # Ours: a refinement round's score (docs/fidelity.md, "Refinement").
            r = event.refine_round
            data = {
                "round": r.round,
                "score": r.score if r.HasField("score") else None,
                "rolledBack": r.rolled_back,
            }
            out.append(self._f("refineRound", v, data=data))
        elif kind == "unrequested_changes":
            # Ours: what an update changed beyond the selected element (docs/fidelity.md).
            data = changes_frame(event.unrequested_changes)
            out.append(self._f("unrequestedChanges", v, data=data))
        return out

    def _entry_write(self, index: int, path: str, out: list[Frame]) -> bool:
        """Whether a write to `path` is to the variant's entry page (the code every client
        shows): `index.html` (or no path), else the first page the variant writes (a
        stylesheet written first is one of the others, as the agent's record has it). When
        `index.html` comes after another file took the entry's place, that file becomes
        one of the others (a `setFile` into `out`)."""
        entry = self._entry.get(index)
        if path == BUILT_PATH or entry == BUILT_PATH:
            # A built project's page (docs/react.md) is its entry for good: the sources,
            # its index.html included, are the others.
            if path == BUILT_PATH and entry != BUILT_PATH:
                self._demote(index, entry, out)
                self._entry[index] = BUILT_PATH
            return path == BUILT_PATH
        if path in ("", "index.html"):
            if entry != "index.html":
                self._demote(index, entry, out)
            self._entry[index] = "index.html"
            return True
        if entry is None and not path.lower().endswith(_SHARED_SUFFIXES):
            self._entry[index] = path
            return True
        return path == entry

    def _demote(self, index: int, entry: str | None, out: list[Frame]) -> None:
        """The entry page so far becomes one of the others (a `setFile` into `out`)."""
        if entry is not None and index in self._code:
            earlier = self._code[index].text()
            self._files.setdefault(index, {})[entry] = earlier
            out.append(self._f("setFile", index, path=entry, value=earlier))

    def _f(self, kind: str, variant_index: int | None, **fields: Any) -> Frame:
        if self._resumable:
            fields["seq"] = self._seq
        return frame(kind, variant_index, **fields)

    def resync(self) -> list[Frame]:
        """After a resume's silent catch-up: the whole code of every variant."""
        # Text still pending is from events the client saw before it dropped.
        self._pending.clear()
        for code in self._code.values():
            code.dirty = code.length > 0
            code.known = False  # append mode: what the client holds is unknown
        files = [
            self._f("setFile", index, path=path, value=content)
            for index, project in self._files.items()
            for path, content in project.items()
        ]
        return files + self.flush_all()

    def _delta(self, kind: str, event: pb.GenerationEvent) -> list[Frame]:
        text = event.assistant_delta.text if kind == "assistant" else event.thinking_delta.text
        key = self._key(event.variant_index)
        pending = self._pending.get(key)
        out = [self._models] if self._models is not None else []
        self._models = None
        if (
            pending is not None
            and pending.kind == kind
            and pending.variant_index == event.variant_index
            and pending.event_id == event.event_id
        ):
            pending.parts.append(text)
            pending.seq = event.sequence
            return out
        if pending is not None:
            out.append(self._take_pending(key))
        self._pending[key] = _PendingDelta(
            kind, event.variant_index, event.event_id, [text], event.sequence
        )
        return out

    def _take_pending(self, key: int) -> Frame:
        pending = self._pending.pop(key)
        return frame(
            pending.kind,
            pending.variant_index,
            value="".join(pending.parts),
            eventId=pending.event_id or None,
            seq=pending.seq if self._resumable else None,
        )

    def _flush_code(self, index: int) -> list[Frame]:
        code = self._code.get(index)
        if code is None or not code.dirty:
            return []
        return self._send_code(index, code, self._clock())

    def _send_code(self, index: int, code: _VariantCode, now: float) -> list[Frame]:
        return (
            self._code_frame(index, code, now) if self._append else self._set_code(index, code, now)
        )

    def _append_delta(self, index: int, seq: int, delta: pb.CodeDelta) -> list[Frame]:
        code = self._variant(index)
        if delta.offset < code.shown:
            code.known = False  # the client holds text the file no longer has
        code.apply(seq, delta.offset, delta.text)
        if code.length == 0 or (code.known and code.length == code.shown):
            # As for setCode: a restarted file shows its first text, never a blank page;
            # and an append is never empty.
            code.dirty, code.due = False, None
            return []
        now = self._clock()
        assert code.appends is not None
        due = code.appends.due(now)
        if not code.known or due <= now:
            # A replaced file goes out at once, whole; new text once the interval allows.
            return self._code_frame(index, code, now)
        code.due = due
        return []

    def _append_snapshot(self, index: int, seq: int, content: str) -> list[Frame]:
        code = self._variant(index)
        held = code.text()[: code.shown] if code.known else ""
        code.replace(seq, content)
        # The usual snapshot (create_file's, the final one) only confirms what was
        # streamed: the client gets the text it lacks, if any, not the file again.
        if code.known and content.startswith(held):
            if code.length == code.shown:
                code.dirty, code.due = False, None
                return []
            return self._code_frame(index, code, self._clock())
        # create_file keeps the document only, so text streamed after `</html>` (a
        # newline, most often) is gone from the file: the client cuts its tail.
        if code.known and held.startswith(content):
            assert code.appends is not None
            code.appends.mark_sent(self._clock())
            code.shown, code.dirty, code.due = code.length, False, None
            return [self._code_out("appendCode", index, code, offset=utf16_len(content), value="")]
        code.known = False
        return self._code_frame(index, code, self._clock())

    def _code_frame(self, index: int, code: _VariantCode, now: float) -> list[Frame]:
        """Append mode: what the client lacks, as an append or (if it holds something
        else) the whole file."""
        text = code.text()
        if code.known:
            out = [self._code_out("appendCode", index, code, value=text[code.shown :])]
        else:
            out = [self._code_out("setCode", index, code, value=text)]
        code.shown, code.known, code.dirty, code.due = len(text), True, False, None
        assert code.appends is not None
        code.appends.mark_sent(now)
        return out

    def _set_code(self, index: int, code: _VariantCode, now: float) -> list[Frame]:
        text = code.text()
        code.dirty = False
        code.due = None
        code.policy.mark_sent(now, len(text.encode()))
        return [self._code_out("setCode", index, code, value=text)]

    def _code_out(self, kind: str, index: int, code: _VariantCode, **fields: Any) -> Frame:
        # A code frame may leave after frames of later events (it waits for its interval),
        # so it carries its own code's sequence, not the latest one: a client keeps the
        # highest it saw, and a re-attach from there starts with code at least as new as
        # what it holds, never an older snapshot followed by the text it already had.
        return frame(kind, index, **fields, seq=code.seq if self._resumable else None)


def utf16_len(text: str) -> int:
    """The length a browser gives `text` (UTF-16 code units): an offset it can slice at."""
    return len(text.encode("utf-16-le")) // 2


def encode(out: Frame) -> bytes:
    """A frame as the UTF-8 JSON text the socket carries: compact, non-ASCII as is.

    orjson writes the bytes at once; `json.dumps` escaped a whole-file setCode character
    by character and the socket then encoded it again (12 KB: 60 against 8 µs, the
    gateway's largest cost of its own under load). Protobuf strings are valid UTF-8, so
    no lone surrogate (which orjson refuses) reaches here."""
    return orjson.dumps(out)
