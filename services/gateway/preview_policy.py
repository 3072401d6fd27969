"""When the gateway sends a variant's `setCode` frame during a streamed preview.

The upstream browser protocol only knows `setCode` with the whole file, so every frame
costs the full file size, and freshness costs bytes. Upstream sends one for every 40 new
characters: bytes on the wire grow with the square of the file. `SetCodePolicy` paces by
characters **and** by time: the first frame goes out at once, then a new one only when the
code grew by `min_chars` **and** the frame's own pacing interval passed since the last one
**and** the variant's setCode traffic stays within `max_bytes_per_s` over any one-second
window (a frame counts for one second after it is sent).

The pacing interval follows the frame's size: a frame of `n` bytes waits `n / (cap / 2)`
since the last, and never less than `min_interval_s`. A small page updates every 50 ms (on
40 new characters: as fresh as upstream, with no more bytes), a big one less often, and
paced frames use about half the cap. The cap check keeps the other half free: a paced frame
goes out only if the window still has room for one more frame of its size afterwards
(plus what the code grew by since the last frame), so the final flush, which must precede
`variantComplete` and is never held back, fits within the cap too. A file over half the cap
cannot have two frames in one second: its final flush is the one frame allowed past it.

A change that cannot go out yet is pending, never dropped: `on_change` says when it may, so
the gateway arms a timer. A pending change smaller than `min_chars` goes out once the stream
has been quiet for `idle_s` (and the interval allows), so a paused stream never leaves the
preview behind; the first frame of a new file goes out as promptly as the first.

The policy is pure (no I/O, no asyncio); time comes in as `now`, seconds on a monotonic
clock, non-decreasing across calls.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Final

_WINDOW_S: Final = 1.0  # the bandwidth cap holds over every window this long
# Frames shorter than this say little about the bytes per character of the big ones.
_MIN_LEN_FOR_RATIO: Final = 256


@dataclass(frozen=True, slots=True)
class PreviewPolicyConfig:
    """Tuning of `SetCodePolicy`."""

    # Growth that justifies a new frame: upstream's rule, so a slow stream never costs
    # more bytes than upstream's client does.
    min_chars: int = 40
    # The floor of the pacing interval (which grows with the frame: see the module doc).
    # 50 ms is about what a reader notices; below it frames only cost bytes.
    min_interval_s: float = 0.05
    max_bytes_per_s: int = 1_000_000  # setCode bytes per variant in any 1 s window
    # A change smaller than min_chars still goes out once the stream has been quiet this
    # long, so a paused stream never leaves the preview behind.
    idle_s: float = 0.1
    # The timer for a pending change fires this long after it is due: while a stream runs,
    # the agent delivers code at least every 10 ms (its code tick), and a frame sent as a
    # batch arrives carries everything up to that moment, where one sent by a timer just
    # before a batch leaves that batch waiting a whole interval. The timer only serves a
    # stream that has stopped.
    arrival_grace_s: float = 0.01
    # `appendCode` clients (`AppendPolicy`): the least time between two appends of one
    # variant. Each frame costs ~50 bytes of JSON around its text, so this trades bytes for
    # freshness (bench/ui_stream.py): at 50 ms a 400 char/s stream is as fresh as its
    # setCodes (p99 ~85 ms) at ~3.4x the content in JSON, 0.8x once deflated.
    append_interval_s: float = 0.05

    def __post_init__(self) -> None:
        limits = (self.min_chars, self.min_interval_s, self.idle_s, self.arrival_grace_s)
        if min(*limits, self.append_interval_s) < 0:
            raise ValueError("preview policy limits must not be negative")
        if self.max_bytes_per_s <= 0:
            raise ValueError("max_bytes_per_s must be positive")


class SetCodePolicy:
    """Decides, for one variant, when the current code goes to the browser.

    The gateway calls `on_change` whenever the code changes: it sends a frame at once when
    the time returned has come, else arms a timer for that time (a newer change answers
    anew). After every frame it sends (asked for or not: flushes before `toolStart`,
    `toolResult`, `variantComplete` and close, snapshots) it calls `mark_sent`.
    """

    def __init__(self, config: PreviewPolicyConfig | None = None) -> None:
        self.config = config or PreviewPolicyConfig()
        self._first = True  # no frame since the start or the last restart
        self._sent_len = 0
        self._interval_ready = -math.inf
        self._idle_ready = -math.inf
        self._len = 0
        self._sent_bytes = 0  # the last frame's size
        self._dirty = False
        self._bytes_per_char = 1.0
        self._window: deque[tuple[float, int]] = deque()  # (leaves the window at, bytes)
        self._window_bytes = 0

    def on_change(self, now: float, code_len: int, *, restart: bool = False) -> float:
        """Records that the code is now `code_len` code points long, and says when to send
        it: at once when the time returned is `now` or earlier, else then (a timer), unless
        newer code comes first. `restart` means the code was replaced from the start (a new
        file): its first frame goes out as promptly as the very first one.

        The timer waits `arrival_grace_s` past the due time once the stream's first frame
        is out: code arriving meanwhile goes out with its batch (see the config).
        """
        self._len = code_len
        self._dirty = True
        self._idle_ready = now + self.config.idle_s
        if restart:
            self._first = True
        due = self._due(now)
        if due <= now or self._first:
            return due
        return due + self.config.arrival_grace_s

    def mark_sent(self, now: float, nbytes: int) -> None:
        """A frame with the current code, `nbytes` long, went to the browser at `now`."""
        self._prune(now)
        self._window.append((now + _WINDOW_S, nbytes))
        self._window_bytes += nbytes
        if self._len >= _MIN_LEN_FOR_RATIO:
            self._bytes_per_char = max(self._bytes_per_char, nbytes / self._len)
        self._first = False
        self._sent_len = self._len
        self._sent_bytes = nbytes
        self._interval_ready = now + self.interval(nbytes)
        self._dirty = False

    def interval(self, nbytes: int) -> float:
        """The least time after a frame of `nbytes` before the next paced one."""
        return max(self.config.min_interval_s, 2 * nbytes / self.config.max_bytes_per_s)

    def next_due(self, now: float) -> float | None:
        """When the pending change may go out (at least `now`); None when nothing waits."""
        return self._due(now) if self._dirty else None

    def _due(self, now: float) -> float:
        if self._first:
            return self._cap_ready(now)
        # Room for the final flush: a frame as big as this one, grown by as much again.
        size = self._estimate()
        cap_ready = self._cap_ready(now, size + max(0, size - self._sent_bytes))
        if abs(self._len - self._sent_len) >= self.config.min_chars:
            allowed = self._interval_ready
        else:
            allowed = max(self._interval_ready, self._idle_ready)
        return max(allowed, cap_ready)

    def _estimate(self) -> int:
        """The pending frame's bytes, by what earlier frames cost per character."""
        return math.ceil(self._len * self._bytes_per_char)

    def _prune(self, now: float) -> None:
        window = self._window
        while window and window[0][0] <= now:
            self._window_bytes -= window.popleft()[1]

    def _cap_ready(self, now: float, reserve: int = 0) -> float:
        """The earliest time, from `now`, at which the pending frame fits within the cap
        with `reserve` bytes to spare."""
        self._prune(now)
        cap, size = self.config.max_bytes_per_s, self._estimate() + reserve
        remaining = self._window_bytes
        if remaining + size <= cap or not self._window:
            return now  # a frame larger than the cap itself goes out alone
        for leaves, nbytes in self._window:
            remaining -= nbytes
            if remaining + size <= cap:
                return leaves
        return self._window[-1][0]


class AppendPolicy:
    """When a variant's new text goes to an `appendCode` client: a leading-edge throttle.

    An append carries only text the client has not seen, so its bytes are the content's
    whatever the pacing; pacing only bounds the frames (and their JSON around the text).
    Text that arrives at least `append_interval_s` after the last append goes out at once;
    other text waits until that interval has passed. A delta is on the wire at most one
    interval after the gateway got it. Pure, like `SetCodePolicy`.
    """

    def __init__(self, interval_s: float) -> None:
        self._interval_s = interval_s
        self._ready = -math.inf

    def due(self, now: float) -> float:
        """When text pending at `now` may go out (at least `now`)."""
        return max(now, self._ready)

    def mark_sent(self, now: float) -> None:
        self._ready = now + self._interval_s
