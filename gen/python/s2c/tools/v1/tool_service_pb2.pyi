from google.protobuf import struct_pb2 as _struct_pb2
from s2c.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProjectBuild(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROJECT_BUILD_UNSPECIFIED: _ClassVar[ProjectBuild]
    PROJECT_BUILD_REACT_VITE: _ClassVar[ProjectBuild]

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
PROJECT_BUILD_UNSPECIFIED: ProjectBuild
PROJECT_BUILD_REACT_VITE: ProjectBuild
CAPTURE_DEVICE_UNSPECIFIED: CaptureDevice
CAPTURE_DEVICE_DESKTOP: CaptureDevice
CAPTURE_DEVICE_MOBILE: CaptureDevice
CAPTURE_FORMAT_UNSPECIFIED: CaptureFormat
CAPTURE_FORMAT_PNG: CaptureFormat
CAPTURE_FORMAT_JPEG: CaptureFormat

class ToolFlags(_message.Message):
    __slots__ = ("image_generation_enabled", "asset_extraction_enabled", "has_input_images")
    IMAGE_GENERATION_ENABLED_FIELD_NUMBER: _ClassVar[int]
    ASSET_EXTRACTION_ENABLED_FIELD_NUMBER: _ClassVar[int]
    HAS_INPUT_IMAGES_FIELD_NUMBER: _ClassVar[int]
    image_generation_enabled: bool
    asset_extraction_enabled: bool
    has_input_images: bool
    def __init__(self, image_generation_enabled: _Optional[bool] = ..., asset_extraction_enabled: _Optional[bool] = ..., has_input_images: _Optional[bool] = ...) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ("flags", "credentials")
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    flags: ToolFlags
    credentials: _common_pb2.Credentials
    def __init__(self, flags: _Optional[_Union[ToolFlags, _Mapping]] = ..., credentials: _Optional[_Union[_common_pb2.Credentials, _Mapping]] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ("tools", "unavailable")
    class UnavailableEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ToolDefinition]
    unavailable: _containers.ScalarMap[str, str]
    def __init__(self, tools: _Optional[_Iterable[_Union[ToolDefinition, _Mapping]]] = ..., unavailable: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ToolDefinition(_message.Message):
    __slots__ = ("name", "description", "input_schema")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    input_schema: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "arguments", "invalid_json")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    INVALID_JSON_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    arguments: _struct_pb2.Struct
    invalid_json: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., invalid_json: _Optional[str] = ...) -> None: ...

class ToolContext(_message.Message):
    __slots__ = ("input_images", "option_codes", "flags", "credentials", "asset_base_url", "viewport_widths", "max_project_bytes", "image_tags", "images", "build")
    INPUT_IMAGES_FIELD_NUMBER: _ClassVar[int]
    OPTION_CODES_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    ASSET_BASE_URL_FIELD_NUMBER: _ClassVar[int]
    VIEWPORT_WIDTHS_FIELD_NUMBER: _ClassVar[int]
    MAX_PROJECT_BYTES_FIELD_NUMBER: _ClassVar[int]
    IMAGE_TAGS_FIELD_NUMBER: _ClassVar[int]
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    BUILD_FIELD_NUMBER: _ClassVar[int]
    input_images: _containers.RepeatedScalarFieldContainer[str]
    option_codes: _containers.RepeatedScalarFieldContainer[str]
    flags: ToolFlags
    credentials: _common_pb2.Credentials
    asset_base_url: str
    viewport_widths: _containers.RepeatedScalarFieldContainer[int]
    max_project_bytes: int
    image_tags: _containers.RepeatedCompositeFieldContainer[ImageTag]
    images: _containers.RepeatedCompositeFieldContainer[InputImage]
    build: ProjectBuild
    def __init__(self, input_images: _Optional[_Iterable[str]] = ..., option_codes: _Optional[_Iterable[str]] = ..., flags: _Optional[_Union[ToolFlags, _Mapping]] = ..., credentials: _Optional[_Union[_common_pb2.Credentials, _Mapping]] = ..., asset_base_url: _Optional[str] = ..., viewport_widths: _Optional[_Iterable[int]] = ..., max_project_bytes: _Optional[int] = ..., image_tags: _Optional[_Iterable[_Union[ImageTag, _Mapping]]] = ..., images: _Optional[_Iterable[_Union[InputImage, _Mapping]]] = ..., build: _Optional[_Union[ProjectBuild, str]] = ...) -> None: ...

class InputImage(_message.Message):
    __slots__ = ("sha256", "data", "mime_type")
    SHA256_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    sha256: str
    data: bytes
    mime_type: str
    def __init__(self, sha256: _Optional[str] = ..., data: _Optional[bytes] = ..., mime_type: _Optional[str] = ...) -> None: ...

class ImageTag(_message.Message):
    __slots__ = ("path", "viewport_width")
    PATH_FIELD_NUMBER: _ClassVar[int]
    VIEWPORT_WIDTH_FIELD_NUMBER: _ClassVar[int]
    path: str
    viewport_width: int
    def __init__(self, path: _Optional[str] = ..., viewport_width: _Optional[int] = ...) -> None: ...

class ExecuteToolRequest(_message.Message):
    __slots__ = ("call", "file", "context", "files")
    CALL_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    call: ToolCall
    file: _common_pb2.FileState
    context: ToolContext
    files: _containers.RepeatedCompositeFieldContainer[_common_pb2.FileState]
    def __init__(self, call: _Optional[_Union[ToolCall, _Mapping]] = ..., file: _Optional[_Union[_common_pb2.FileState, _Mapping]] = ..., context: _Optional[_Union[ToolContext, _Mapping]] = ..., files: _Optional[_Iterable[_Union[_common_pb2.FileState, _Mapping]]] = ...) -> None: ...

class ExecuteToolResponse(_message.Message):
    __slots__ = ("ok", "result", "summary", "updated_file", "media", "built_file")
    OK_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FILE_FIELD_NUMBER: _ClassVar[int]
    MEDIA_FIELD_NUMBER: _ClassVar[int]
    BUILT_FILE_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    result: _struct_pb2.Struct
    summary: _struct_pb2.Struct
    updated_file: _common_pb2.FileState
    media: _containers.RepeatedCompositeFieldContainer[_common_pb2.MediaPart]
    built_file: _common_pb2.FileState
    def __init__(self, ok: _Optional[bool] = ..., result: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., summary: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., updated_file: _Optional[_Union[_common_pb2.FileState, _Mapping]] = ..., media: _Optional[_Iterable[_Union[_common_pb2.MediaPart, _Mapping]]] = ..., built_file: _Optional[_Union[_common_pb2.FileState, _Mapping]] = ...) -> None: ...

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

class ScoreFidelityRequest(_message.Message):
    __slots__ = ("code", "image", "image_index", "viewport_width", "with_regions", "path", "files", "reference", "check_accessibility")
    CODE_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    IMAGE_INDEX_FIELD_NUMBER: _ClassVar[int]
    VIEWPORT_WIDTH_FIELD_NUMBER: _ClassVar[int]
    WITH_REGIONS_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    CHECK_ACCESSIBILITY_FIELD_NUMBER: _ClassVar[int]
    code: str
    image: str
    image_index: int
    viewport_width: int
    with_regions: bool
    path: str
    files: _containers.RepeatedCompositeFieldContainer[_common_pb2.FileState]
    reference: InputImage
    check_accessibility: bool
    def __init__(self, code: _Optional[str] = ..., image: _Optional[str] = ..., image_index: _Optional[int] = ..., viewport_width: _Optional[int] = ..., with_regions: _Optional[bool] = ..., path: _Optional[str] = ..., files: _Optional[_Iterable[_Union[_common_pb2.FileState, _Mapping]]] = ..., reference: _Optional[_Union[InputImage, _Mapping]] = ..., check_accessibility: _Optional[bool] = ...) -> None: ...

class FidelityRegion(_message.Message):
    __slots__ = ("x", "y", "width", "height", "expected_text", "actual_text", "issue")
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_TEXT_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_TEXT_FIELD_NUMBER: _ClassVar[int]
    ISSUE_FIELD_NUMBER: _ClassVar[int]
    x: int
    y: int
    width: int
    height: int
    expected_text: str
    actual_text: str
    issue: str
    def __init__(self, x: _Optional[int] = ..., y: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., expected_text: _Optional[str] = ..., actual_text: _Optional[str] = ..., issue: _Optional[str] = ...) -> None: ...

class ScoreFidelityResponse(_message.Message):
    __slots__ = ("fidelity", "regions", "comparison_png", "accessibility")
    FIDELITY_FIELD_NUMBER: _ClassVar[int]
    REGIONS_FIELD_NUMBER: _ClassVar[int]
    COMPARISON_PNG_FIELD_NUMBER: _ClassVar[int]
    ACCESSIBILITY_FIELD_NUMBER: _ClassVar[int]
    fidelity: _common_pb2.Fidelity
    regions: _containers.RepeatedCompositeFieldContainer[FidelityRegion]
    comparison_png: bytes
    accessibility: _common_pb2.Accessibility
    def __init__(self, fidelity: _Optional[_Union[_common_pb2.Fidelity, _Mapping]] = ..., regions: _Optional[_Iterable[_Union[FidelityRegion, _Mapping]]] = ..., comparison_png: _Optional[bytes] = ..., accessibility: _Optional[_Union[_common_pb2.Accessibility, _Mapping]] = ...) -> None: ...

class BuildProjectRequest(_message.Message):
    __slots__ = ("build", "files")
    BUILD_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    build: ProjectBuild
    files: _containers.RepeatedCompositeFieldContainer[_common_pb2.FileState]
    def __init__(self, build: _Optional[_Union[ProjectBuild, str]] = ..., files: _Optional[_Iterable[_Union[_common_pb2.FileState, _Mapping]]] = ...) -> None: ...

class BuildProjectResponse(_message.Message):
    __slots__ = ("ok", "page", "errors")
    OK_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    page: str
    errors: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ok: _Optional[bool] = ..., page: _Optional[str] = ..., errors: _Optional[_Iterable[str]] = ...) -> None: ...

class CompareRendersRequest(_message.Message):
    __slots__ = ("before", "after", "before_files", "after_files", "path", "viewport_widths", "selected_element_html")
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FILES_FIELD_NUMBER: _ClassVar[int]
    AFTER_FILES_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    VIEWPORT_WIDTHS_FIELD_NUMBER: _ClassVar[int]
    SELECTED_ELEMENT_HTML_FIELD_NUMBER: _ClassVar[int]
    before: str
    after: str
    before_files: _containers.RepeatedCompositeFieldContainer[_common_pb2.FileState]
    after_files: _containers.RepeatedCompositeFieldContainer[_common_pb2.FileState]
    path: str
    viewport_widths: _containers.RepeatedScalarFieldContainer[int]
    selected_element_html: str
    def __init__(self, before: _Optional[str] = ..., after: _Optional[str] = ..., before_files: _Optional[_Iterable[_Union[_common_pb2.FileState, _Mapping]]] = ..., after_files: _Optional[_Iterable[_Union[_common_pb2.FileState, _Mapping]]] = ..., path: _Optional[str] = ..., viewport_widths: _Optional[_Iterable[int]] = ..., selected_element_html: _Optional[str] = ...) -> None: ...

class CompareRendersResponse(_message.Message):
    __slots__ = ("widths",)
    WIDTHS_FIELD_NUMBER: _ClassVar[int]
    widths: _containers.RepeatedCompositeFieldContainer[_common_pb2.ChangedWidth]
    def __init__(self, widths: _Optional[_Iterable[_Union[_common_pb2.ChangedWidth, _Mapping]]] = ...) -> None: ...
