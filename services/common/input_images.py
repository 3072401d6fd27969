"""A generation's input images, parsed once where they enter.

A request carries its screenshots as data URLs. The agent parses each one here, once, into
an `InputImage`: its bytes, their SHA-256 (the image's name from then on: upload ids, the
tool workers' image cache, the scorer's caches), its size from the header and its tag
(the page and width it shows, `page_tags.py`). Everything downstream — the providers, the
tool calls, the live score — takes that value and never parses the URL again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from services.common.image_headers import ImageRefused, read_header
from services.common.tool_types import ImageTag
from services.common.uploads import DIGEST_CHARS, UPLOAD_ID_PREFIX, parse_data_url

# What an input image may be: the request's formats (the agent's validation), by type.
IMAGE_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp", "image/heic", "image/heif"}
)


@dataclass(frozen=True, slots=True)
class InputImage:
    mime_type: str
    data: bytes = field(repr=False)
    sha256: str  # lowercase hex digest of `data`
    width: int = 0  # from the header; 0 when it could not be read
    height: int = 0
    tag: ImageTag = field(default_factory=ImageTag)

    @classmethod
    def of(cls, mime_type: str, data: bytes, tag: ImageTag | None = None) -> InputImage:
        """The image of `data`, hashed and measured (its header only, no pixel decoded)."""
        try:
            header = read_header(data)
            width, height = header.width, header.height
        except ImageRefused:
            width = height = 0  # not one we can read: whoever decodes it says so
        digest = hashlib.sha256(data).hexdigest()
        return cls(mime_type, data, digest, width, height, tag or ImageTag())

    @property
    def upload_id(self) -> str:
        """The `tmp_asset_<digest>` id the image is staged under (uploads.upload_id)."""
        return f"{UPLOAD_ID_PREFIX}{self.sha256[:DIGEST_CHARS]}"


def parse_input_image(url: str, tag: ImageTag | None = None) -> InputImage:
    """The image of a request's data URL; ValueError says why it is not one."""
    parsed = parse_data_url(url)
    if parsed.content_type not in IMAGE_TYPES:
        raise ValueError(f"not an image data URL ({parsed.content_type})")
    return InputImage.of(parsed.content_type, parsed.data, tag)


# A tool worker's answer to a call naming images by hash it does not hold (the tool
# proto's `ToolContext.images`): FAILED_PRECONDITION with an ErrorInfo of this reason and
# domain, whose metadata lists the missing digests; the caller sends them and asks again.
NOT_HELD_REASON = "IMAGES_NOT_HELD"
NOT_HELD_DOMAIN = "s2c.tools.v1"
NOT_HELD_KEY = "sha256"


class ImagesNotHeld(Exception):
    """Input images named by hash whose bytes this process does not hold."""

    def __init__(self, digests: tuple[str, ...]) -> None:
        super().__init__(f"the tool worker does not hold {len(digests)} input image(s)")
        self.digests = digests

    @property
    def metadata(self) -> dict[str, str]:
        return {NOT_HELD_KEY: ",".join(self.digests)}

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, str]) -> ImagesNotHeld:
        return cls(tuple(d for d in metadata.get(NOT_HELD_KEY, "").split(",") if d))
