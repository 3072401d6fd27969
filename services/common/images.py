"""One budget for every image a process decodes: read the header, refuse or plan, decode.

A small compressed image can stand for gigabytes of pixels (a 300 KB PNG of 9000×9000 is
324 MB once decoded), and Pillow's only guard is its own 179-megapixel cut-off. So every
decode goes through here:

* The header is read first, without decoding a pixel (`image_headers.py`).
* What decoding will cost is estimated from the header, per format: Pillow keeps most
  modes at 4 bytes a pixel; a progressive or multi-scan JPEG also holds every DCT
  coefficient; WebP and HEIF decode through buffers of their own (docs/architecture.md,
  "Image budget", has the measurements). An image whose decode would take more than
  `ImageLimits.max_bytes` is refused with an `ImageTooLarge` that names the limit.
* A baseline JPEG is decoded at 1/2, 1/4 or 1/8 scale by libjpeg itself (`draft`) when the
  caller wants it smaller, or when that is what it takes to stay within the budget; every
  other format is decoded whole and then reduced strip by strip, so the reduced copy never
  needs a second full-size buffer.
* A process decodes at most `max_bytes` worth of images at a time (`ImageDecoder`, a
  FIFO gate: one large image at a time, several small ones together), and once the last
  large decode is done the C heap is trimmed: glibc otherwise keeps the freed pages of its
  per-thread arenas, and RSS stayed gigabytes above idle after a decode in a thread.
  Callers that would decode the same bytes at once share one result (`shared`).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import struct
import threading
import weakref
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

from PIL import Image, ImageFile

from services.common import settings_env
from services.common.image_headers import (
    ImageHeader,
    ImageRefused,
    ImageUnreadable,
    open_file,
    read_header,
)

__all__ = [
    "ImageDecoder",
    "ImageHeader",
    "ImageLimits",
    "ImageRefused",
    "ImageTooLarge",
    "ImageUnreadable",
    "check",
    "plan_decode",
    "read_header",
    "trim_heap",
]

MAX_PIXELS_ENV = "S2C_IMAGE_MAX_PIXELS"
DEFAULT_MAX_PIXELS = 24_000_000
# Pillow keeps RGB, RGBA, LA, CMYK, I and F at 4 bytes a pixel.
BYTES_PER_PIXEL = 4
# Extra bytes per pixel of the full image, beyond the decoded pixels, measured with RSS
# (bench/images.py prints them): libwebp's canvas and Pillow's copy of it; libheif's
# planes; libjpeg's coefficient buffers (2 bytes per component sample) when a JPEG is
# progressive or has several scans.
_WEBP_EXTRA = 12
_HEIF_EXTRA = 4
_JPEG_COEFFICIENT = 2
_JPEG_SCALES = (1, 2, 4, 8)
# Converted or reduced in strips of about this many bytes.
_STRIP_BYTES = 8 << 20
# Trim the C heap after a decode of at least this many bytes once no other decode runs.
_TRIM_AFTER_BYTES = 16 << 20
_WHITE = (255, 255, 255)

R = TypeVar("R")
_ONE_BYTE_MODES = frozenset({"1", "L", "P"})


@dataclass(frozen=True, slots=True)
class ImageLimits:
    """The pixels one image may have once decoded, at 4 bytes a pixel (formats whose
    decoders need more memory a pixel get proportionally fewer)."""

    max_pixels: int = DEFAULT_MAX_PIXELS

    def __post_init__(self) -> None:
        if self.max_pixels <= 0:
            raise ValueError(f"{MAX_PIXELS_ENV} must be a positive number of pixels")

    @property
    def max_bytes(self) -> int:
        return self.max_pixels * BYTES_PER_PIXEL

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ImageLimits:
        return cls(settings_env.integer(env, MAX_PIXELS_ENV, DEFAULT_MAX_PIXELS))


class ImageTooLarge(ImageRefused):
    pass


@dataclass(frozen=True, slots=True)
class DecodePlan:
    header: ImageHeader
    scale: int  # libjpeg's draft scale: 1, 2, 4 or 8
    size: tuple[int, int]  # what the image is then resampled to, in strips
    out_mode: Literal["RGB", "RGBA"]
    decode_bytes: int
    copy_bytes: int  # the converted or reduced copy; 0 when the decoded image is handed out

    @property
    def cost(self) -> int:
        return self.decode_bytes + self.copy_bytes


def plan_decode(
    header: ImageHeader, limits: ImageLimits, *, max_side: int | None = None, flatten: bool = False
) -> DecodePlan:
    """How to decode within `limits` to at most `max_side` pixels a side: the least
    reduction that fits; ImageTooLarge when none does."""
    longest = max(header.width, header.height)
    size = (header.width, header.height)
    if max_side is not None and longest > max_side:
        shrink = max_side / longest
        size = (max(1, int(header.width * shrink)), max(1, int(header.height * shrink)))
    scales = _JPEG_SCALES if header.format == "JPEG" else (1,)
    # Drafting down to the wanted size costs no quality; further only to fit the budget.
    first = max(s for s in scales if s == 1 or s <= longest / max(size))
    out_mode: Literal["RGB", "RGBA"] = "RGBA" if header.alpha and not flatten else "RGB"
    for scale in (s for s in scales if s >= first):
        plan = _plan_at(header, scale, size, out_mode)
        if plan.decode_bytes <= limits.max_bytes:
            return plan
    smallest = _plan_at(header, scales[-1], size, out_mode)
    raise ImageTooLarge(
        f"the image is {header.describe()}; decoding it would take about "
        f"{_mb(smallest.decode_bytes)}, more than the limit of {limits.max_pixels} pixels "
        f"allows ({_mb(limits.max_bytes)} at {BYTES_PER_PIXEL} bytes a pixel; "
        f"{MAX_PIXELS_ENV})"
    )


def check(data: bytes, limits: ImageLimits) -> ImageHeader:
    """The header, once the image is known to be decodable within `limits` somehow:
    what a request boundary refuses early. Raises ImageTooLarge or ImageUnreadable."""
    header = read_header(data)
    plan_decode(header, limits, max_side=1)  # the cheapest decode there is
    return header


class ImageDecoder:
    """Decodes images within `limits`, holding at most `limits.max_bytes` of decodes at
    once in this process (one large image at a time; the first to ask goes first).

    One per service process, shared by everything in it that decodes. Blocking: call it
    from a worker thread.
    """

    def __init__(self, limits: ImageLimits) -> None:
        self.limits = limits
        self._gate = _Gate(limits.max_bytes)
        self._results: weakref.WeakValueDictionary[Hashable, Any] = weakref.WeakValueDictionary()
        self._flights: dict[Hashable, threading.Lock] = {}
        self._memo = threading.Lock()

    def shared(self, key: Hashable, make: Callable[[], R]) -> R:
        """`make()`'s result for `key`, made once for all who ask while one of them still
        holds it: the variants of a generation fit the same image once, not once each.
        Held weakly (the result must take weak references), so nothing outlives its users;
        a `make` that raises is tried again by the next caller."""
        with self._memo:
            found = cast("R | None", self._results.get(key))
            if found is not None:
                return found
            flight = self._flights.setdefault(key, threading.Lock())
        with flight:
            with self._memo:
                found = cast("R | None", self._results.get(key))
            if found is not None:
                return found
            try:
                result = make()
                with self._memo:
                    self._results[key] = result
                return result
            finally:
                with self._memo:
                    if self._flights.get(key) is flight:
                        del self._flights[key]

    @contextlib.contextmanager
    def open(
        self,
        data: bytes,
        *,
        max_side: int | None = None,
        flatten: bool = False,
        upright: bool = False,
    ) -> Iterator[Image.Image]:
        """The decoded image, RGB (RGBA when it has transparency and `flatten` is off),
        at most `max_side` pixels a side, turned upright by its EXIF orientation if
        `upright`. Held until the block ends; the pixels are freed then.

        Raises ImageTooLarge or ImageUnreadable before anything is decoded, and
        ImageUnreadable when the data turns out to be truncated or corrupt.
        """
        plan = plan_decode(read_header(data), self.limits, max_side=max_side, flatten=flatten)
        with self._gate.hold(plan.cost):
            image = _decode(data, plan, upright)
            try:
                yield image
            finally:
                image.close()
                del image


def trim_heap() -> None:
    """Gives the C heap's free pages back to the system (glibc only; elsewhere a no-op)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _load_malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


_MALLOC_TRIM = _load_malloc_trim()


class _Gate:
    """A FIFO weighted semaphore over threads: a holder waits until it is first in line
    and its weight fits beside the others held (or nothing is held)."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._held = 0
        self._line: deque[object] = deque()
        self._changed = threading.Condition()

    @contextlib.contextmanager
    def hold(self, weight: int) -> Iterator[None]:
        ticket = object()
        with self._changed:
            self._line.append(ticket)
            try:
                self._changed.wait_for(
                    lambda: (
                        self._line[0] is ticket
                        and (self._held == 0 or self._held + weight <= self._capacity)
                    )
                )
            finally:
                self._line.remove(ticket)
                self._changed.notify_all()
            self._held += weight
        try:
            yield
        finally:
            with self._changed:
                self._held -= weight
                idle = self._held == 0
                self._changed.notify_all()
            if idle and weight >= _TRIM_AFTER_BYTES:
                trim_heap()


def _plan_at(
    header: ImageHeader, scale: int, size: tuple[int, int], out_mode: Literal["RGB", "RGBA"]
) -> DecodePlan:
    width, height = -(-header.width // scale), -(-header.height // scale)
    # A draft past the wanted size (to fit the budget) makes the image smaller still.
    size = (min(size[0], width), min(size[1], height))
    decoded = width * height * _mode_bytes(header.mode)
    if header.format == "WEBP":
        decoded += header.pixels * _WEBP_EXTRA
    elif header.format == "HEIF":
        decoded += header.pixels * _HEIF_EXTRA
    elif header.buffered:
        decoded += int(header.pixels * _JPEG_COEFFICIENT * header.samples)
    copy = 0
    # WebP is always copied out, so that its decoder's canvas can go at once.
    if size != (width, height) or header.mode != out_mode or header.format == "WEBP":
        copy = size[0] * size[1] * BYTES_PER_PIXEL
    return DecodePlan(header, scale, size, out_mode, decoded, copy)


def _mode_bytes(mode: str) -> int:
    if mode in _ONE_BYTE_MODES:
        return 1
    if mode.startswith("I;16"):
        return 2
    return BYTES_PER_PIXEL


def _mb(count: int) -> str:
    return f"{count / 1e6:,.0f} MB"


# EXIF orientation → the transposition that makes the image upright.
_UPRIGHT = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}


def _decode(data: bytes, plan: DecodePlan, upright: bool) -> Image.Image:
    header = plan.header
    source: ImageFile.ImageFile | None = open_file(data, header.format)
    assert source is not None
    try:
        if plan.scale > 1:
            source.draft(None, (header.width // plan.scale, header.height // plan.scale))
        source.load()
        turn = _UPRIGHT.get(source.getexif().get(0x0112, 1)) if upright else None
        if plan.copy_bytes:
            image: Image.Image = _copied(source, plan)
        else:
            image, source = source, None  # handed out as it is; the caller closes it
    except (OSError, ValueError, SyntaxError, struct.error) as exc:
        raise ImageUnreadable(f"the {header.format} image could not be decoded") from exc
    finally:
        if source is not None:
            source.close()
    if turn is None:
        return image
    turned = image.transpose(turn)
    image.close()
    return turned


def _copied(source: Image.Image, plan: DecodePlan) -> Image.Image:
    """Converted to the plan's mode and resampled to its size, strip by strip: each strip
    is cut with the rows the filter reaches beyond it, so the seams are invisible and no
    full-size intermediate (Pillow's premultiplied copy, its two-pass buffer) exists."""
    width, height = source.size
    out_width, out_height = plan.size
    out = Image.new(plan.out_mode, plan.size, _WHITE)
    step = height / out_height  # source rows per output row
    # Lanczos reaches 3 output pixels either side, i.e. 3 × step source rows.
    margin = math.ceil(3 * step) + 1
    out_rows = max(1, int(_STRIP_BYTES / BYTES_PER_PIXEL / max(width, 1) / step))
    for first in range(0, out_height, out_rows):
        last = min(out_height, first + out_rows)
        top = max(0, math.floor(first * step) - margin)
        bottom = min(height, math.ceil(last * step) + margin)
        strip = source.crop((0, top, width, bottom))
        if strip.mode not in ("RGB", "RGBA"):
            strip = strip.convert("RGBA" if plan.header.alpha else "RGB")
        if (out_width, out_height) != (width, height):
            # Pillow resamples RGBA premultiplied, so flattening after is the same as before.
            box = (0.0, first * step - top, float(width), last * step - top)
            strip = strip.resize(
                (out_width, last - first), Image.Resampling.LANCZOS, box, reducing_gap=2.0
            )
        if strip.mode != plan.out_mode:
            # Transparency goes onto white, as a page background usually is.
            white = Image.new("RGBA", strip.size, (*_WHITE, 255))
            strip = Image.alpha_composite(white, strip).convert("RGB")
        out.paste(strip, (0, first))
    return out
