import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from s2c.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GenerationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GENERATION_TYPE_UNSPECIFIED: _ClassVar[GenerationType]
    GENERATION_TYPE_CREATE: _ClassVar[GenerationType]
    GENERATION_TYPE_UPDATE: _ClassVar[GenerationType]

class InputMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INPUT_MODE_UNSPECIFIED: _ClassVar[InputMode]
    INPUT_MODE_IMAGE: _ClassVar[InputMode]
    INPUT_MODE_VIDEO: _ClassVar[InputMode]
    INPUT_MODE_TEXT: _ClassVar[InputMode]

class Stack(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STACK_UNSPECIFIED: _ClassVar[Stack]
    STACK_HTML_TAILWIND: _ClassVar[Stack]
    STACK_HTML_CSS: _ClassVar[Stack]
    STACK_REACT_TAILWIND: _ClassVar[Stack]
    STACK_BOOTSTRAP: _ClassVar[Stack]
    STACK_VUE_TAILWIND: _ClassVar[Stack]
    STACK_IONIC_TAILWIND: _ClassVar[Stack]
    STACK_REACT_VITE: _ClassVar[Stack]

class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROLE_UNSPECIFIED: _ClassVar[Role]
    ROLE_USER: _ClassVar[Role]
    ROLE_ASSISTANT: _ClassVar[Role]

class RunStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_STATUS_UNSPECIFIED: _ClassVar[RunStatus]
    RUN_STATUS_RUNNING: _ClassVar[RunStatus]
    RUN_STATUS_COMPLETED: _ClassVar[RunStatus]
    RUN_STATUS_FAILED: _ClassVar[RunStatus]
    RUN_STATUS_CANCELLED: _ClassVar[RunStatus]
    RUN_STATUS_INTERRUPTED: _ClassVar[RunStatus]

class CaptureDevice(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CAPTURE_DEVICE_UNSPECIFIED: _ClassVar[CaptureDevice]
    CAPTURE_DEVICE_DESKTOP: _ClassVar[CaptureDevice]
    CAPTURE_DEVICE_MOBILE: _ClassVar[CaptureDevice]

class CaptureFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CAPTURE_FORMAT_UNSPECIFIED: _ClassVar[CaptureFormat]
    CAPTURE_FORMAT_PNG: _ClassVar[CaptureFormat]
    CAPTURE_FORMAT_JPEG: _ClassVar[CaptureFormat]
GENERATION_TYPE_UNSPECIFIED: GenerationType
GENERATION_TYPE_CREATE: GenerationType
GENERATION_TYPE_UPDATE: GenerationType
INPUT_MODE_UNSPECIFIED: InputMode
INPUT_MODE_IMAGE: InputMode
INPUT_MODE_VIDEO: InputMode
INPUT_MODE_TEXT: InputMode
STACK_UNSPECIFIED: Stack
STACK_HTML_TAILWIND: Stack
STACK_HTML_CSS: Stack
STACK_REACT_TAILWIND: Stack
STACK_BOOTSTRAP: Stack
STACK_VUE_TAILWIND: Stack
STACK_IONIC_TAILWIND: Stack
STACK_REACT_VITE: Stack
ROLE_UNSPECIFIED: Role
ROLE_USER: Role
ROLE_ASSISTANT: Role
RUN_STATUS_UNSPECIFIED: RunStatus
RUN_STATUS_RUNNING: RunStatus
RUN_STATUS_COMPLETED: RunStatus
RUN_STATUS_FAILED: RunStatus
RUN_STATUS_CANCELLED: RunStatus
RUN_STATUS_INTERRUPTED: RunStatus
CAPTURE_DEVICE_UNSPECIFIED: CaptureDevice
CAPTURE_DEVICE_DESKTOP: CaptureDevice
CAPTURE_DEVICE_MOBILE: CaptureDevice
CAPTURE_FORMAT_UNSPECIFIED: CaptureFormat
CAPTURE_FORMAT_PNG: CaptureFormat
CAPTURE_FORMAT_JPEG: CaptureFormat

class Prompt(_message.Message):
    __slots__ = ("text", "full_text", "images", "videos", "image_meta", "selected_element_html")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    FULL_TEXT_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    VIDEOS_FIELD_NUMBER: _ClassVar[int]
    IMAGE_META_FIELD_NUMBER: _ClassVar[int]
    SELECTED_ELEMENT_HTML_FIELD_NUMBER: _ClassVar[int]
    text: str
    full_text: str
    images: _containers.RepeatedScalarFieldContainer[str]
    videos: _containers.RepeatedScalarFieldContainer[str]
    image_meta: _containers.RepeatedCompositeFieldContainer[ImageMeta]
    selected_element_html: str
    def __init__(self, text: _Optional[str] = ..., full_text: _Optional[str] = ..., images: _Optional[_Iterable[str]] = ..., videos: _Optional[_Iterable[str]] = ..., image_meta: _Optional[_Iterable[_Union[ImageMeta, _Mapping]]] = ..., selected_element_html: _Optional[str] = ...) -> None: ...

class ImageMeta(_message.Message):
    __slots__ = ("viewport_width", "page")
    VIEWPORT_WIDTH_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    viewport_width: int
    page: str
    def __init__(self, viewport_width: _Optional[int] = ..., page: _Optional[str] = ...) -> None: ...

class HistoryMessage(_message.Message):
    __slots__ = ("role", "text", "images", "videos")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    VIDEOS_FIELD_NUMBER: _ClassVar[int]
    role: Role
    text: str
    images: _containers.RepeatedScalarFieldContainer[str]
    videos: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, role: _Optional[_Union[Role, str]] = ..., text: _Optional[str] = ..., images: _Optional[_Iterable[str]] = ..., videos: _Optional[_Iterable[str]] = ...) -> None: ...

class GenerateCodeRequest(_message.Message):
    __slots__ = ("generation_id", "generation_type", "input_mode", "stack", "prompt", "history", "file_state", "option_codes", "asset_extraction_enabled", "image_generation_enabled", "design_system", "credentials", "models", "variant_count", "asset_base_url", "files", "score_fidelity", "refine_rounds", "code_batch_chars")
    GENERATION_ID_FIELD_NUMBER: _ClassVar[int]
    GENERATION_TYPE_FIELD_NUMBER: _ClassVar[int]
    INPUT_MODE_FIELD_NUMBER: _ClassVar[int]
    STACK_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    FILE_STATE_FIELD_NUMBER: _ClassVar[int]
    OPTION_CODES_FIELD_NUMBER: _ClassVar[int]
    ASSET_EXTRACTION_ENABLED_FIELD_NUMBER: _ClassVar[int]
    IMAGE_GENERATION_ENABLED_FIELD_NUMBER: _ClassVar[int]
    DESIGN_SYSTEM_FIELD_NUMBER: _ClassVar[int]
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    VARIANT_COUNT_FIELD_NUMBER: _ClassVar[int]
    ASSET_BASE_URL_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIDELITY_FIELD_NUMBER: _ClassVar[int]
    REFINE_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    CODE_BATCH_CHARS_FIELD_NUMBER: _ClassVar[int]
    generation_id: str
    generation_type: GenerationType
    input_mode: InputMode
    stack: Stack
    prompt: Prompt
    history: _containers.RepeatedCompositeFieldContainer[HistoryMessage]
    file_state: _common_pb2.FileState
    option_codes: _containers.RepeatedScalarFieldContainer[str]
    asset_extraction_enabled: bool
    image_generation_enabled: bool
    design_system: str
    credentials: _common_pb2.Credentials
    models: _containers.RepeatedScalarFieldContainer[str]
    variant_count: int
    asset_base_url: str
    files: _containers.RepeatedCompositeFieldContainer[_common_pb2.FileState]
    score_fidelity: bool
    refine_rounds: int
    code_batch_chars: int
    def __init__(self, generation_id: _Optional[str] = ..., generation_type: _Optional[_Union[GenerationType, str]] = ..., input_mode: _Optional[_Union[InputMode, str]] = ..., stack: _Optional[_Union[Stack, str]] = ..., prompt: _Optional[_Union[Prompt, _Mapping]] = ..., history: _Optional[_Iterable[_Union[HistoryMessage, _Mapping]]] = ..., file_state: _Optional[_Union[_common_pb2.FileState, _Mapping]] = ..., option_codes: _Optional[_Iterable[str]] = ..., asset_extraction_enabled: _Optional[bool] = ..., image_generation_enabled: _Optional[bool] = ..., design_system: _Optional[str] = ..., credentials: _Optional[_Union[_common_pb2.Credentials, _Mapping]] = ..., models: _Optional[_Iterable[str]] = ..., variant_count: _Optional[int] = ..., asset_base_url: _Optional[str] = ..., files: _Optional[_Iterable[_Union[_common_pb2.FileState, _Mapping]]] = ..., score_fidelity: _Optional[bool] = ..., refine_rounds: _Optional[int] = ..., code_batch_chars: _Optional[int] = ...) -> None: ...

class GenerationEvent(_message.Message):
    __slots__ = ("generation_id", "sequence", "variant_index", "event_id", "variant_count", "status", "assistant_delta", "thinking_delta", "tool_start", "tool_result", "code_delta", "code_snapshot", "usage", "variant_complete", "variant_error", "generation_error", "generation_complete", "fidelity", "accessibility", "refine_round", "unrequested_changes")
    GENERATION_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    VARIANT_INDEX_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    VARIANT_COUNT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ASSISTANT_DELTA_FIELD_NUMBER: _ClassVar[int]
    THINKING_DELTA_FIELD_NUMBER: _ClassVar[int]
    TOOL_START_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    CODE_DELTA_FIELD_NUMBER: _ClassVar[int]
    CODE_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    VARIANT_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    VARIANT_ERROR_FIELD_NUMBER: _ClassVar[int]
    GENERATION_ERROR_FIELD_NUMBER: _ClassVar[int]
    GENERATION_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    FIDELITY_FIELD_NUMBER: _ClassVar[int]
    ACCESSIBILITY_FIELD_NUMBER: _ClassVar[int]
    REFINE_ROUND_FIELD_NUMBER: _ClassVar[int]
    UNREQUESTED_CHANGES_FIELD_NUMBER: _ClassVar[int]
    generation_id: str
    sequence: int
    variant_index: int
    event_id: str
    variant_count: VariantCount
    status: Status
    assistant_delta: TextDelta
    thinking_delta: TextDelta
    tool_start: ToolStart
    tool_result: ToolResult
    code_delta: CodeDelta
    code_snapshot: CodeSnapshot
    usage: _common_pb2.Usage
    variant_complete: VariantComplete
    variant_error: VariantError
    generation_error: GenerationError
    generation_complete: GenerationComplete
    fidelity: _common_pb2.Fidelity
    accessibility: _common_pb2.Accessibility
    refine_round: RefineRound
    unrequested_changes: UnrequestedChanges
    def __init__(self, generation_id: _Optional[str] = ..., sequence: _Optional[int] = ..., variant_index: _Optional[int] = ..., event_id: _Optional[str] = ..., variant_count: _Optional[_Union[VariantCount, _Mapping]] = ..., status: _Optional[_Union[Status, _Mapping]] = ..., assistant_delta: _Optional[_Union[TextDelta, _Mapping]] = ..., thinking_delta: _Optional[_Union[TextDelta, _Mapping]] = ..., tool_start: _Optional[_Union[ToolStart, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResult, _Mapping]] = ..., code_delta: _Optional[_Union[CodeDelta, _Mapping]] = ..., code_snapshot: _Optional[_Union[CodeSnapshot, _Mapping]] = ..., usage: _Optional[_Union[_common_pb2.Usage, _Mapping]] = ..., variant_complete: _Optional[_Union[VariantComplete, _Mapping]] = ..., variant_error: _Optional[_Union[VariantError, _Mapping]] = ..., generation_error: _Optional[_Union[GenerationError, _Mapping]] = ..., generation_complete: _Optional[_Union[GenerationComplete, _Mapping]] = ..., fidelity: _Optional[_Union[_common_pb2.Fidelity, _Mapping]] = ..., accessibility: _Optional[_Union[_common_pb2.Accessibility, _Mapping]] = ..., refine_round: _Optional[_Union[RefineRound, _Mapping]] = ..., unrequested_changes: _Optional[_Union[UnrequestedChanges, _Mapping]] = ...) -> None: ...

class GenerateCodeResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[GenerationEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[GenerationEvent, _Mapping]]] = ...) -> None: ...

class WatchGenerationResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[GenerationEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[GenerationEvent, _Mapping]]] = ...) -> None: ...

class VariantCount(_message.Message):
    __slots__ = ("count", "models")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    count: int
    models: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, count: _Optional[int] = ..., models: _Optional[_Iterable[str]] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class TextDelta(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ToolStart(_message.Message):
    __slots__ = ("name", "input")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    name: str
    input: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("name", "output", "ok")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    name: str
    output: _struct_pb2.Struct
    ok: bool
    def __init__(self, name: _Optional[str] = ..., output: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., ok: _Optional[bool] = ...) -> None: ...

class CodeDelta(_message.Message):
    __slots__ = ("offset", "text", "path")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    offset: int
    text: str
    path: str
    def __init__(self, offset: _Optional[int] = ..., text: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class CodeSnapshot(_message.Message):
    __slots__ = ("path", "content")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    path: str
    content: str
    def __init__(self, path: _Optional[str] = ..., content: _Optional[str] = ...) -> None: ...

class VariantComplete(_message.Message):
    __slots__ = ("usage",)
    USAGE_FIELD_NUMBER: _ClassVar[int]
    usage: _common_pb2.Usage
    def __init__(self, usage: _Optional[_Union[_common_pb2.Usage, _Mapping]] = ...) -> None: ...

class VariantError(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class GenerationError(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class GenerationComplete(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: RunStatus
    def __init__(self, status: _Optional[_Union[RunStatus, str]] = ...) -> None: ...

class WatchGenerationRequest(_message.Message):
    __slots__ = ("generation_id", "after_sequence")
    GENERATION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    generation_id: str
    after_sequence: int
    def __init__(self, generation_id: _Optional[str] = ..., after_sequence: _Optional[int] = ...) -> None: ...

class CancelGenerationRequest(_message.Message):
    __slots__ = ("generation_id",)
    GENERATION_ID_FIELD_NUMBER: _ClassVar[int]
    generation_id: str
    def __init__(self, generation_id: _Optional[str] = ...) -> None: ...

class CancelGenerationResponse(_message.Message):
    __slots__ = ("cancelled",)
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    cancelled: bool
    def __init__(self, cancelled: _Optional[bool] = ...) -> None: ...

class GetGenerationRequest(_message.Message):
    __slots__ = ("generation_id",)
    GENERATION_ID_FIELD_NUMBER: _ClassVar[int]
    generation_id: str
    def __init__(self, generation_id: _Optional[str] = ...) -> None: ...

class GetGenerationResponse(_message.Message):
    __slots__ = ("generation",)
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    generation: Generation
    def __init__(self, generation: _Optional[_Union[Generation, _Mapping]] = ...) -> None: ...

class Generation(_message.Message):
    __slots__ = ("generation_id", "status", "started_at", "finished_at", "variants", "error")
    GENERATION_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    VARIANTS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    generation_id: str
    status: RunStatus
    started_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    variants: _containers.RepeatedCompositeFieldContainer[VariantRecord]
    error: str
    def __init__(self, generation_id: _Optional[str] = ..., status: _Optional[_Union[RunStatus, str]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., variants: _Optional[_Iterable[_Union[VariantRecord, _Mapping]]] = ..., error: _Optional[str] = ...) -> None: ...

class VariantRecord(_message.Message):
    __slots__ = ("variant_index", "model", "status", "error", "code", "usage", "tool_calls", "files", "fidelity", "accessibility", "refine_rounds", "unrequested_changes")
    VARIANT_INDEX_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    FIDELITY_FIELD_NUMBER: _ClassVar[int]
    ACCESSIBILITY_FIELD_NUMBER: _ClassVar[int]
    REFINE_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    UNREQUESTED_CHANGES_FIELD_NUMBER: _ClassVar[int]
    variant_index: int
    model: str
    status: RunStatus
    error: str
    code: str
    usage: _common_pb2.Usage
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCallRecord]
    files: _containers.RepeatedCompositeFieldContainer[_common_pb2.FileState]
    fidelity: _containers.RepeatedCompositeFieldContainer[_common_pb2.Fidelity]
    accessibility: _containers.RepeatedCompositeFieldContainer[_common_pb2.Accessibility]
    refine_rounds: _containers.RepeatedCompositeFieldContainer[RefineRound]
    unrequested_changes: _containers.RepeatedCompositeFieldContainer[UnrequestedChanges]
    def __init__(self, variant_index: _Optional[int] = ..., model: _Optional[str] = ..., status: _Optional[_Union[RunStatus, str]] = ..., error: _Optional[str] = ..., code: _Optional[str] = ..., usage: _Optional[_Union[_common_pb2.Usage, _Mapping]] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCallRecord, _Mapping]]] = ..., files: _Optional[_Iterable[_Union[_common_pb2.FileState, _Mapping]]] = ..., fidelity: _Optional[_Iterable[_Union[_common_pb2.Fidelity, _Mapping]]] = ..., accessibility: _Optional[_Iterable[_Union[_common_pb2.Accessibility, _Mapping]]] = ..., refine_rounds: _Optional[_Iterable[_Union[RefineRound, _Mapping]]] = ..., unrequested_changes: _Optional[_Iterable[_Union[UnrequestedChanges, _Mapping]]] = ...) -> None: ...

class UnrequestedChanges(_message.Message):
    __slots__ = ("check", "widths", "summary")
    CHECK_FIELD_NUMBER: _ClassVar[int]
    WIDTHS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    check: int
    widths: _containers.RepeatedCompositeFieldContainer[_common_pb2.ChangedWidth]
    summary: str
    def __init__(self, check: _Optional[int] = ..., widths: _Optional[_Iterable[_Union[_common_pb2.ChangedWidth, _Mapping]]] = ..., summary: _Optional[str] = ...) -> None: ...

class RefineRound(_message.Message):
    __slots__ = ("round", "score", "rolled_back")
    ROUND_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    ROLLED_BACK_FIELD_NUMBER: _ClassVar[int]
    round: int
    score: float
    rolled_back: bool
    def __init__(self, round: _Optional[int] = ..., score: _Optional[float] = ..., rolled_back: _Optional[bool] = ...) -> None: ...

class ToolCallRecord(_message.Message):
    __slots__ = ("id", "name", "ok", "duration_ms")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    ok: bool
    duration_ms: int
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., ok: _Optional[bool] = ..., duration_ms: _Optional[int] = ...) -> None: ...

class ListModelsRequest(_message.Message):
    __slots__ = ("credentials",)
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    credentials: _common_pb2.Credentials
    def __init__(self, credentials: _Optional[_Union[_common_pb2.Credentials, _Mapping]] = ...) -> None: ...

class ListModelsResponse(_message.Message):
    __slots__ = ("models", "stacks")
    MODELS_FIELD_NUMBER: _ClassVar[int]
    STACKS_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[Model]
    stacks: _containers.RepeatedScalarFieldContainer[Stack]
    def __init__(self, models: _Optional[_Iterable[_Union[Model, _Mapping]]] = ..., stacks: _Optional[_Iterable[_Union[Stack, str]]] = ...) -> None: ...

class Model(_message.Message):
    __slots__ = ("id", "provider", "api_name", "available", "vision", "tools", "video", "endpoint", "credential")
    ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    API_NAME_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    VISION_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    VIDEO_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_FIELD_NUMBER: _ClassVar[int]
    id: str
    provider: str
    api_name: str
    available: bool
    vision: bool
    tools: bool
    video: bool
    endpoint: str
    credential: str
    def __init__(self, id: _Optional[str] = ..., provider: _Optional[str] = ..., api_name: _Optional[str] = ..., available: _Optional[bool] = ..., vision: _Optional[bool] = ..., tools: _Optional[bool] = ..., video: _Optional[bool] = ..., endpoint: _Optional[str] = ..., credential: _Optional[str] = ...) -> None: ...

class GetCapabilitiesRequest(_message.Message):
    __slots__ = ("credentials",)
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    credentials: _common_pb2.Credentials
    def __init__(self, credentials: _Optional[_Union[_common_pb2.Credentials, _Mapping]] = ...) -> None: ...

class GetCapabilitiesResponse(_message.Message):
    __slots__ = ("tools", "screenshot_preview", "unavailable")
    class UnavailableEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    SCREENSHOT_PREVIEW_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedScalarFieldContainer[str]
    screenshot_preview: bool
    unavailable: _containers.ScalarMap[str, str]
    def __init__(self, tools: _Optional[_Iterable[str]] = ..., screenshot_preview: _Optional[bool] = ..., unavailable: _Optional[_Mapping[str, str]] = ...) -> None: ...

class CaptureUrlRequest(_message.Message):
    __slots__ = ("url", "device", "format")
    URL_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    url: str
    device: CaptureDevice
    format: CaptureFormat
    def __init__(self, url: _Optional[str] = ..., device: _Optional[_Union[CaptureDevice, str]] = ..., format: _Optional[_Union[CaptureFormat, str]] = ...) -> None: ...

class CaptureUrlResponse(_message.Message):
    __slots__ = ("image", "mime_type", "width", "height", "final_url", "truncated", "http_status")
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    FINAL_URL_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    HTTP_STATUS_FIELD_NUMBER: _ClassVar[int]
    image: bytes
    mime_type: str
    width: int
    height: int
    final_url: str
    truncated: bool
    http_status: int
    def __init__(self, image: _Optional[bytes] = ..., mime_type: _Optional[str] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., final_url: _Optional[str] = ..., truncated: _Optional[bool] = ..., http_status: _Optional[int] = ...) -> None: ...

class GetAgentInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetAgentInfoResponse(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...
