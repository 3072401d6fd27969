"""One budget for every image a process decodes: read the header, refuse or plan, decode.

A small compressed image can stand for gigabytes of pixels (a 300 KB PNG of 9000×9000 is
324 MB once decoded), and Pillow's only guard is its own 179-megapixel cut-off. So every
decode goes through here:

* The header is read first (Pillow's plugins read only the header until `load`; WebP is
  parsed here, because Pillow's WebP plugin allocates its whole canvas when it opens).
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
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import math
import struct
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from PIL import GifImagePlugin, Image, ImageFile, JpegImagePlugin, PngImagePlugin, WebPImagePlugin
from pillow_heif.as_plugin import HeifImageFile

from services.common import settings_env

MAX_PIXELS_ENV = "S2C_IMAGE_MAX_PIXELS"
DEFAULT_MAX_PIXELS = 32_000_000
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

Format = Literal["PNG", "JPEG", "GIF", "WEBP", "HEIF"]
_OPENERS: Mapping[Format, Callable[[io.BytesIO], ImageFile.ImageFile]] = {
    "PNG": PngImagePlugin.PngImageFile,
    "JPEG": JpegImagePlugin.JpegImageFile,
    "GIF": GifImagePlugin.GifImageFile,
    "WEBP": WebPImagePlugin.WebPImageFile,
    "HEIF": HeifImageFile,
}
_ALPHA_MODES = frozenset({"RGBA", "LA", "PA", "La", "RGBa"})
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


class ImageRefused(ValueError):
    """An image that will not be decoded; `message` says why, for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ImageTooLarge(ImageRefused):
    pass


class ImageUnreadable(ImageRefused):
    pass


@dataclass(frozen=True, slots=True)
class ImageHeader:
    format: Format
    width: int
    height: int
    mode: str  # Pillow's mode before any conversion
    alpha: bool
    # A JPEG whose coefficients libjpeg must hold whole (progressive, or several scans).
    buffered: bool = False
    # Component samples per pixel (JPEG: 1.5 for 4:2:0 colour), for the coefficient buffers.
    samples: float = 1.0

    @property
    def pixels(self) -> int:
        return self.width * self.height

    def describe(self) -> str:
        return f"{self.width}×{self.height} pixels ({self.format})"


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


def sniff(data: bytes) -> Format | None:
    """The format by its signature, among those we decode."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    if data[4:8] == b"ftyp":
        return "HEIF"
    return None


def read_header(data: bytes) -> ImageHeader:
    """The header of `data`, without decoding a pixel; ImageUnreadable when it has none."""
    kind = sniff(data)
    if kind is None:
        raise ImageUnreadable("the data is not a PNG, JPEG, GIF, WebP or HEIF image")
    if kind == "WEBP":
        return _webp_header(data)
    image = _open_file(data, kind)
    try:
        alpha = image.mode in _ALPHA_MODES or "transparency" in image.info
        buffered = kind == "JPEG" and ("progressive" in image.info or _jpeg_scans(data) > 1)
        samples = _jpeg_samples(image) if buffered else 1.0
        return ImageHeader(kind, image.width, image.height, image.mode, alpha, buffered, samples)
    finally:
        image.close()


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


def _open_file(data: bytes, kind: Format) -> ImageFile.ImageFile:
    # The plugin class itself, not Image.open: no other format's parser ever sees the
    # bytes, and Pillow's own bomb check (a process-wide knob) does not stand in for ours.
    try:
        return _OPENERS[kind](io.BytesIO(data))
    except (SyntaxError, OSError, ValueError, struct.error, IndexError, TypeError) as exc:
        raise ImageUnreadable(f"the {kind} image could not be read") from exc


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
    source: ImageFile.ImageFile | None = _open_file(data, header.format)
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


def _webp_header(data: bytes) -> ImageHeader:
    """Canvas size and alpha from the first chunk (RIFF container; VP8, VP8L or VP8X)."""
    chunk = data[12:16]
    try:
        if chunk == b"VP8X":
            flags = data[20]
            width = 1 + int.from_bytes(data[24:27], "little")
            height = 1 + int.from_bytes(data[27:30], "little")
            alpha = bool(flags & 0x10)
        elif chunk == b"VP8L" and data[20] == 0x2F:
            bits = int.from_bytes(data[21:25], "little")
            width, height = 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
            alpha = bool(bits >> 28 & 1)
        elif chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
            width = int.from_bytes(data[26:28], "little") & 0x3FFF
            height = int.from_bytes(data[28:30], "little") & 0x3FFF
            alpha = False
        else:
            raise IndexError
    except IndexError:
        raise ImageUnreadable("the WEBP image could not be read") from None
    if len(data) < 30 or not width or not height:
        raise ImageUnreadable("the WEBP image could not be read")
    return ImageHeader("WEBP", width, height, "RGBA" if alpha else "RGB", alpha)


def _jpeg_samples(image: ImageFile.ImageFile) -> float:
    """Samples per pixel over all components, from their sampling factors (a component
    sampled h×v of the largest factors has that share of the pixels)."""
    layers: list[tuple[str, int, int, int]] = getattr(image, "layer", None) or []
    factors = [(int(h), int(v)) for _, h, v, _ in layers if h > 0 and v > 0]
    if not factors:
        return float(len(image.mode))
    most = max(h for h, _ in factors) * max(v for _, v in factors)
    return float(sum(h * v for h, v in factors)) / most


def _jpeg_scans(data: bytes) -> int:
    """How many scans the first image of a JPEG has.

    Every scan after the first makes libjpeg hold the whole image's coefficients. The
    segments before the first scan are walked by their lengths (an EXIF thumbnail inside
    APP1 is skipped whole); after it, entropy-coded data escapes 0xFF, so the scans'
    markers are counted up to the image's end marker (data after it, as in MPO files,
    is another image).
    """
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return 1
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker == 0xDA:
            end = data.find(b"\xff\xd9", at)
            return data.count(b"\xff\xda", at, len(data) if end < 0 else end)
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:
            at += 2
            continue
        at += 2 + int.from_bytes(data[at + 2 : at + 4], "big")
    return 1
