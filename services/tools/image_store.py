"""The input images a tool worker holds, by SHA-256 (the tool proto's `ToolContext.images`).

An agent names a generation's images by hash in every call and sends an image's bytes only
to a worker that answered that it does not hold them (ImagesNotHeld): so a tool call's
size does not grow with the number and size of the request's images, and a worker keeps
the images of the generations it serves for their later calls. Bounded by bytes, least
recently used first out; a miss costs the agent one more round trip with the bytes.

Bytes that come in are checked against the hash they are sent under: the store is shared
by every generation, so nobody can put other bytes under an image's name.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from services.common.input_images import IMAGE_TYPES, ImagesNotHeld, InputImage
from services.common.tool_types import ImageTag
from services.common.uploads import MAX_ASSET_BYTES


@dataclass(frozen=True, slots=True)
class ImageRef:
    """An input image as a call names it: its hash, type and, when sent, its bytes."""

    sha256: str
    mime_type: str
    data: bytes = field(default=b"", repr=False)
    tag: ImageTag = field(default_factory=ImageTag)


class BadImageRef(ValueError):
    """A reference that cannot name an image (the caller's fault); says which field."""

    def __init__(self, index: int, field_name: str, problem: str) -> None:
        super().__init__(f"images[{index}].{field_name}: {problem}")
        self.field = f"images[{index}].{field_name}"
        self.problem = problem


class ImageStore:
    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._images: OrderedDict[str, InputImage] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._images)

    def keep(self, refs: Sequence[ImageRef]) -> dict[str, InputImage]:
        """Stores the images whose bytes came with `refs` and returns them by hash;
        BadImageRef for bytes that are not an image of an accepted type and size, or not
        the image of their hash."""
        sent: dict[str, InputImage] = {}
        for index, ref in enumerate(refs):
            if not ref.data:
                continue
            if ref.mime_type not in IMAGE_TYPES:
                raise BadImageRef(index, "mime_type", f"not an input image type: {ref.mime_type}")
            if len(ref.data) > MAX_ASSET_BYTES:
                raise BadImageRef(index, "data", f"more than {MAX_ASSET_BYTES} bytes")
            if hashlib.sha256(ref.data).hexdigest() != ref.sha256:
                raise BadImageRef(index, "sha256", "not the SHA-256 of data")
            image = self._images.get(ref.sha256) or InputImage.of(ref.mime_type, ref.data)
            self._put(image)
            sent[ref.sha256] = image
        return sent

    def resolve(self, refs: Sequence[ImageRef]) -> tuple[InputImage, ...]:
        """The images `refs` name, each with its tag, in order; ImagesNotHeld lists those
        this worker does not hold (the caller sends them)."""
        # Sent with this call: used as sent, even when the store could not keep them.
        known = self.keep(refs)
        for ref in refs:
            if ref.sha256 not in known and (held := self._images.get(ref.sha256)) is not None:
                self._images.move_to_end(ref.sha256)
                known[ref.sha256] = held
        missing = tuple(dict.fromkeys(r.sha256 for r in refs if r.sha256 not in known))
        if missing:
            raise ImagesNotHeld(missing)
        return tuple(replace(known[ref.sha256], tag=ref.tag) for ref in refs)

    def _put(self, image: InputImage) -> None:
        if image.sha256 in self._images:
            self._images.move_to_end(image.sha256)
            return
        if len(image.data) > self._max_bytes:
            return  # larger than the whole store: each call that needs it sends it
        self._images[image.sha256] = image
        self._bytes += len(image.data)
        while self._bytes > self._max_bytes:
            _, evicted = self._images.popitem(last=False)
            self._bytes -= len(evicted.data)
