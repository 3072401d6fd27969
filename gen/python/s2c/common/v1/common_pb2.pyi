from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Usage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens", "cost_usd", "priced")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    PRICED_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    total_tokens: int
    cost_usd: float
    priced: bool
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ..., total_tokens: _Optional[int] = ..., cost_usd: _Optional[float] = ..., priced: _Optional[bool] = ...) -> None: ...

class FileState(_message.Message):
    __slots__ = ("path", "content")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    path: str
    content: str
    def __init__(self, path: _Optional[str] = ..., content: _Optional[str] = ...) -> None: ...

class MediaPart(_message.Message):
    __slots__ = ("display_name", "mime_type", "data", "url")
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    display_name: str
    mime_type: str
    data: bytes
    url: str
    def __init__(self, display_name: _Optional[str] = ..., mime_type: _Optional[str] = ..., data: _Optional[bytes] = ..., url: _Optional[str] = ...) -> None: ...

class Credentials(_message.Message):
    __slots__ = ("providers",)
    class ProvidersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ProviderCredentials
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ProviderCredentials, _Mapping]] = ...) -> None: ...
    PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    providers: _containers.MessageMap[str, ProviderCredentials]
    def __init__(self, providers: _Optional[_Mapping[str, ProviderCredentials]] = ...) -> None: ...

class ProviderCredentials(_message.Message):
    __slots__ = ("api_key", "base_url")
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    api_key: str
    base_url: str
    def __init__(self, api_key: _Optional[str] = ..., base_url: _Optional[str] = ...) -> None: ...

class Fidelity(_message.Message):
    __slots__ = ("image_index", "viewport_width", "block_match", "text", "position", "color", "visual", "unavailable_reason", "path", "regions")
    IMAGE_INDEX_FIELD_NUMBER: _ClassVar[int]
    VIEWPORT_WIDTH_FIELD_NUMBER: _ClassVar[int]
    BLOCK_MATCH_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    COLOR_FIELD_NUMBER: _ClassVar[int]
    VISUAL_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_REASON_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    REGIONS_FIELD_NUMBER: _ClassVar[int]
    image_index: int
    viewport_width: int
    block_match: float
    text: float
    position: float
    color: float
    visual: float
    unavailable_reason: str
    path: str
    regions: _containers.RepeatedCompositeFieldContainer[FidelityRegion]
    def __init__(self, image_index: _Optional[int] = ..., viewport_width: _Optional[int] = ..., block_match: _Optional[float] = ..., text: _Optional[float] = ..., position: _Optional[float] = ..., color: _Optional[float] = ..., visual: _Optional[float] = ..., unavailable_reason: _Optional[str] = ..., path: _Optional[str] = ..., regions: _Optional[_Iterable[_Union[FidelityRegion, _Mapping]]] = ...) -> None: ...

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

class Accessibility(_message.Message):
    __slots__ = ("viewport_width", "path", "score", "violations", "rules_passed", "engine", "unavailable_reason")
    VIEWPORT_WIDTH_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    RULES_PASSED_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_REASON_FIELD_NUMBER: _ClassVar[int]
    viewport_width: int
    path: str
    score: float
    violations: _containers.RepeatedCompositeFieldContainer[AccessibilityViolation]
    rules_passed: int
    engine: str
    unavailable_reason: str
    def __init__(self, viewport_width: _Optional[int] = ..., path: _Optional[str] = ..., score: _Optional[float] = ..., violations: _Optional[_Iterable[_Union[AccessibilityViolation, _Mapping]]] = ..., rules_passed: _Optional[int] = ..., engine: _Optional[str] = ..., unavailable_reason: _Optional[str] = ...) -> None: ...

class AccessibilityViolation(_message.Message):
    __slots__ = ("rule_id", "impact", "help", "help_url", "node_count", "nodes")
    RULE_ID_FIELD_NUMBER: _ClassVar[int]
    IMPACT_FIELD_NUMBER: _ClassVar[int]
    HELP_FIELD_NUMBER: _ClassVar[int]
    HELP_URL_FIELD_NUMBER: _ClassVar[int]
    NODE_COUNT_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    rule_id: str
    impact: str
    help: str
    help_url: str
    node_count: int
    nodes: _containers.RepeatedCompositeFieldContainer[AccessibilityNode]
    def __init__(self, rule_id: _Optional[str] = ..., impact: _Optional[str] = ..., help: _Optional[str] = ..., help_url: _Optional[str] = ..., node_count: _Optional[int] = ..., nodes: _Optional[_Iterable[_Union[AccessibilityNode, _Mapping]]] = ...) -> None: ...

class AccessibilityNode(_message.Message):
    __slots__ = ("selector", "html")
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    HTML_FIELD_NUMBER: _ClassVar[int]
    selector: str
    html: str
    def __init__(self, selector: _Optional[str] = ..., html: _Optional[str] = ...) -> None: ...

class ChangedRegion(_message.Message):
    __slots__ = ("x", "y", "width", "height", "before_text", "after_text")
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_TEXT_FIELD_NUMBER: _ClassVar[int]
    AFTER_TEXT_FIELD_NUMBER: _ClassVar[int]
    x: int
    y: int
    width: int
    height: int
    before_text: str
    after_text: str
    def __init__(self, x: _Optional[int] = ..., y: _Optional[int] = ..., width: _Optional[int] = ..., height: _Optional[int] = ..., before_text: _Optional[str] = ..., after_text: _Optional[str] = ...) -> None: ...

class ChangedWidth(_message.Message):
    __slots__ = ("viewport_width", "regions", "target", "unavailable_reason")
    VIEWPORT_WIDTH_FIELD_NUMBER: _ClassVar[int]
    REGIONS_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_REASON_FIELD_NUMBER: _ClassVar[int]
    viewport_width: int
    regions: _containers.RepeatedCompositeFieldContainer[ChangedRegion]
    target: ChangedRegion
    unavailable_reason: str
    def __init__(self, viewport_width: _Optional[int] = ..., regions: _Optional[_Iterable[_Union[ChangedRegion, _Mapping]]] = ..., target: _Optional[_Union[ChangedRegion, _Mapping]] = ..., unavailable_reason: _Optional[str] = ...) -> None: ...
