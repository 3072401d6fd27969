"""What a capture shows: a viewport (a name and a window size) and the PNG taken in it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Viewport:
    name: str
    width: int
    height: int

    @property
    def display_name(self) -> str:
        return f"preview_{self.name}.png"


DESKTOP = Viewport("desktop", 1280, 832)
MOBILE = Viewport("mobile", 342, 684)
VIEWPORTS = (DESKTOP, MOBILE)


def width_viewport(width: int) -> Viewport:
    """The viewport a screenshot taken at `width` CSS pixels is compared with: that width,
    at a height typical of such a screen (only the first screen; captures are full-page)."""
    height = 832 if width >= 1024 else 1024 if width >= 600 else 844
    return Viewport(f"{width}px", width, height)


@dataclass(frozen=True, slots=True)
class Capture:
    viewport: Viewport
    png: bytes
    full_page: bool = True
