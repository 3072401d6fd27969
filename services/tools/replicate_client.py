"""Replicate predictions through the official SDK, with our own bounded polling.

We create predictions with the SDK and poll them ourselves instead of calling
`async_run`, because `async_run` waits without a deadline and returns `None` output when
the create call answers "processing" (docs/provider-wire-formats.md, Replicate). Polling starts
fast (image models usually finish in about a second) and backs off so that twenty
concurrent predictions stay well inside Replicate's rate limits.

One `ReplicateClient` serves one tool call: it owns its HTTP transport and closes it on
exit, and its semaphore caps that call's concurrent predictions (MAX_CONCURRENT_PREDICTIONS,
as upstream's batch size). A prediction abandoned on timeout or cancellation is cancelled
at Replicate too, so nobody keeps paying for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType, TracebackType
from typing import Any
from urllib.parse import urlsplit

from services.common.uploads import MAX_ASSET_BYTES
from services.tools.asset_store import url_origin

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.replicate.com"
Z_IMAGE_TURBO = "prunaai/z-image-turbo"
FLUX_2_KLEIN = "black-forest-labs/flux-2-klein-4b"
IMAGE_EDIT_MODEL = "prunaai/p-image-edit"
BACKGROUND_REMOVAL_VERSION = "a029dff38972b5fda4ec5d75d7d1cd25aeff621d2cf4946a41055d7db66b80bc"
MAX_CONCURRENT_PREDICTIONS = 20

_TERMINAL = frozenset({"succeeded", "failed", "canceled"})
_ERROR_DETAIL_CHARS = 300
# A static table: `mimetypes` reads system files on first use, from inside the event loop.
_EXTENSION_MIME: Mapping[str, str] = MappingProxyType(
    {
        ".png": "image/png",
        ".jpg": "image/jpeg",
        ".jpeg": "image/jpeg",
        ".gif": "image/gif",
        ".webp": "image/webp",
        ".avif": "image/avif",
    }
)


@dataclass(frozen=True, slots=True)
class ReplicateSettings:
    # How long a created prediction may take to finish; the create request itself is
    # bounded by request_timeout_s, so that a timeout always knows what to cancel.
    poll_timeout_s: float = 60.0
    first_poll_s: float = 0.1
    max_poll_interval_s: float = 1.0
    max_concurrency: int = MAX_CONCURRENT_PREDICTIONS
    request_timeout_s: float = 30.0  # one HTTP request
    cancel_timeout_s: float = 5.0


@dataclass(frozen=True, slots=True)
class ModelRef:
    """A model by name (`owner/name`, its latest version) or a pinned version id."""

    model: str | None = None
    version: str | None = None

    def __post_init__(self) -> None:
        if (self.model is None) == (self.version is None):
            raise ValueError("ModelRef needs exactly one of model and version")

    def __str__(self) -> str:
        return self.model or f"version {self.version}"


class ImageModelError(Exception):
    """Any failure of a Replicate call; the message is safe to show (it holds no key)."""


class PredictionFailed(ImageModelError):
    pass


class PredictionTimedOut(ImageModelError, TimeoutError):
    pass


class ReplicateHTTPError(ImageModelError):
    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message)
        self.status = status


class ReplicateRequestError(ImageModelError):
    pass


class UnexpectedOutput(ImageModelError, ValueError):
    pass


# -- inputs and outputs ------------------------------------------------------------------


def generation_input(prompt: str, model: str = Z_IMAGE_TURBO) -> dict[str, Any]:
    if model == FLUX_2_KLEIN:
        return {"prompt": prompt, "aspect_ratio": "1:1", "output_format": "png"}
    return {
        "prompt": prompt,
        "width": 1024,
        "height": 1024,
        "go_fast": False,
        "output_format": "png",
        "guidance_scale": 0,
        "num_inference_steps": 8,
    }


def background_removal_input(image: str) -> dict[str, Any]:
    return {
        "image": image,
        "format": "png",
        "reverse": False,
        "threshold": 0,
        "background_type": "rgba",
    }


def edit_input(prompt: str, images: Sequence[str], aspect_ratio: str) -> dict[str, Any]:
    return {"prompt": prompt, "images": list(images), "turbo": True, "aspect_ratio": aspect_ratio}


def output_url(output: Any, context: str) -> str:
    """The image URL in a model's output: a str, `{"url"}`, or a list of either."""
    candidate = output
    if isinstance(candidate, list) and candidate:
        candidate = candidate[0]
    if isinstance(candidate, Mapping):
        candidate = candidate.get("url")
    if isinstance(candidate, str) and candidate.strip():
        return candidate.strip()
    raise UnexpectedOutput(f"Unexpected response from {context}: {_short(repr(output))}")


def _short(text: str) -> str:
    return text if len(text) <= _ERROR_DETAIL_CHARS else text[:_ERROR_DETAIL_CHARS] + "..."


def guess_image_mime(url: str) -> str:
    """The image type a URL's extension suggests; png when it suggests none."""
    path = urlsplit(url).path.lower()
    ext = path[path.rfind(".") :] if "." in path.rsplit("/", 1)[-1] else ""
    return _EXTENSION_MIME.get(ext, "image/png")


def _env_proxy(base_url: str) -> str | None:
    # We hand the SDK our own transport (so we can close it), which makes httpx skip its
    # environment proxy lookup; this keeps HTTPS_PROXY / NO_PROXY working all the same.
    parts = urlsplit(base_url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme.lower())


def _translate(exc: BaseException) -> BaseException:
    """Our exception for a failure of the SDK or the transport; anything else unchanged."""
    import httpx
    from replicate.exceptions import ReplicateError as _SDKHTTPError

    if isinstance(exc, TimeoutError):
        return PredictionTimedOut("Inference timed out")
    if isinstance(exc, _SDKHTTPError):
        detail = _short(str(exc.detail or exc.title or ""))
        return ReplicateHTTPError(
            f"HTTP error occurred: {exc.status} {detail}".rstrip(), exc.status
        )
    if isinstance(exc, httpx.HTTPError):
        return ReplicateRequestError(
            f"An error occurred while requesting: {type(exc).__name__}: {_short(str(exc))}"
        )
    if isinstance(exc, ValueError | TypeError | KeyError):
        # The SDK parses each reply into a pydantic model; a reply without an id, a
        # status or a version lands here.
        return ImageModelError(f"Unexpected response from Replicate: {_short(str(exc))}")
    return exc


# -- the client --------------------------------------------------------------------------


class ReplicateClient:
    """Runs predictions for one tool call; use as `async with ReplicateClient(...) as rc`."""

    def __init__(
        self,
        api_token: str,
        base_url: str = "",
        settings: ReplicateSettings | None = None,
    ) -> None:
        if not api_token:
            raise ValueError("a Replicate API token is required")
        self.settings = settings or ReplicateSettings()
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        # The SDK (with NumPy) and httpx load on a worker's first image call, not at its
        # start (~35 MB; issue 42).
        import httpx
        from replicate.client import Client as _SDKClient

        timeout = httpx.Timeout(self.settings.request_timeout_s, connect=5.0)
        self._transport = httpx.AsyncHTTPTransport(proxy=_env_proxy(self.base_url))
        # Explicit token and base URL: the SDK must not fall back to this process's env.
        self._sdk = _SDKClient(
            api_token=api_token,
            base_url=self.base_url,
            timeout=timeout,
            transport=self._transport,
        )
        self._downloads = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(proxy=_env_proxy(self.base_url)),
            timeout=timeout,
        )
        self._limit = asyncio.Semaphore(self.settings.max_concurrency)

    async def __aenter__(self) -> ReplicateClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._downloads.aclose()
        await self._transport.aclose()

    async def run(self, ref: ModelRef, input: dict[str, Any]) -> Any:
        """Run one prediction to completion and return its raw output."""
        async with self._limit:
            return await self._run(ref, input)

    async def run_for_url(self, ref: ModelRef, input: dict[str, Any], context: str) -> str:
        return output_url(await self.run(ref, input), context)

    async def run_many_for_urls(
        self, ref: ModelRef, inputs: Sequence[dict[str, Any]], context: str
    ) -> list[str | None]:
        """One prediction per input, concurrently (bounded), results in input order.

        A failed item becomes None; the others carry on.
        """

        async def one(index: int, input: dict[str, Any]) -> str | None:
            try:
                return await self.run_for_url(ref, input, context)
            except Exception as exc:
                logger.warning("%s: item %d failed: %s", context, index, exc)
                return None

        return list(await asyncio.gather(*(one(i, item) for i, item in enumerate(inputs))))

    def same_origin(self, url: str) -> bool:
        """True when `url` is served by the Replicate endpoint this client talks to."""
        mine = url_origin(self.base_url)
        return mine is not None and url_origin(url) == mine

    async def fetch_image(self, url: str) -> tuple[bytes, str] | None:
        """Download an output image (at most MAX_ASSET_BYTES); None when that fails.

        Only for URLs of our own endpoint: this is not a general-purpose fetcher.
        """
        import httpx

        if not self.same_origin(url):
            return None
        try:
            async with self._limit, asyncio.timeout(self.settings.poll_timeout_s):
                async with self._downloads.stream("GET", url) as response:
                    content_type = response.headers.get("content-type", "").split(";")[0]
                    if response.status_code != 200 or not content_type.startswith("image/"):
                        return None
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > MAX_ASSET_BYTES:
                            return None
                    return bytes(body), content_type.strip().lower()
        except (httpx.HTTPError, TimeoutError) as exc:
            logger.warning("downloading a Replicate output failed: %s", exc)
            return None

    async def _run(self, ref: ModelRef, input: dict[str, Any]) -> Any:
        prediction: Any = None
        try:
            prediction = await self._create(ref, input)
            async with asyncio.timeout(self.settings.poll_timeout_s):
                delay = self.settings.first_poll_s
                while prediction.status not in _TERMINAL:
                    await asyncio.sleep(delay)
                    delay = min(delay * 1.5, self.settings.max_poll_interval_s)
                    prediction = await self._sdk.predictions.async_get(prediction.id)
        except BaseException as exc:
            # Whatever stopped us waiting (deadline, caller, a failed poll), the
            # prediction would otherwise run on, and be billed, for nobody.
            await self._cancel(prediction)
            translated = _translate(exc)
            if translated is exc:
                raise
            raise translated from None
        if prediction.status == "failed":
            error = prediction.error
            raise PredictionFailed(
                f"Inference errored out: {_short(str(error))}" if error else "Inference failed"
            )
        if prediction.status == "canceled":
            raise PredictionFailed("Inference was canceled")
        return prediction.output

    async def _create(self, ref: ModelRef, input: dict[str, Any]) -> Any:
        if ref.version is not None:
            return await self._sdk.predictions.async_create(version=ref.version, input=input)
        assert ref.model is not None
        return await self._sdk.models.predictions.async_create(model=ref.model, input=input)

    async def _cancel(self, prediction: Any) -> None:
        if prediction is None or prediction.status in _TERMINAL:
            return
        # Best effort and bounded: we are already failing or being cancelled.
        with contextlib.suppress(Exception):
            async with asyncio.timeout(self.settings.cancel_timeout_s):
                await self._sdk.predictions.async_cancel(prediction.id)
