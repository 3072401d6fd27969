from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class Usage(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens", "cost_usd")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_READ_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    total_tokens: int
    cost_usd: float
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., cache_read_tokens: _Optional[int] = ..., cache_write_tokens: _Optional[int] = ..., total_tokens: _Optional[int] = ..., cost_usd: _Optional[float] = ...) -> None: ...

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
    __slots__ = ("openai_api_key", "openai_base_url", "anthropic_api_key", "anthropic_base_url", "gemini_api_key", "gemini_base_url", "replicate_api_token", "replicate_base_url")
    OPENAI_API_KEY_FIELD_NUMBER: _ClassVar[int]
    OPENAI_BASE_URL_FIELD_NUMBER: _ClassVar[int]
    ANTHROPIC_API_KEY_FIELD_NUMBER: _ClassVar[int]
    ANTHROPIC_BASE_URL_FIELD_NUMBER: _ClassVar[int]
    GEMINI_API_KEY_FIELD_NUMBER: _ClassVar[int]
    GEMINI_BASE_URL_FIELD_NUMBER: _ClassVar[int]
    REPLICATE_API_TOKEN_FIELD_NUMBER: _ClassVar[int]
    REPLICATE_BASE_URL_FIELD_NUMBER: _ClassVar[int]
    openai_api_key: str
    openai_base_url: str
    anthropic_api_key: str
    anthropic_base_url: str
    gemini_api_key: str
    gemini_base_url: str
    replicate_api_token: str
    replicate_base_url: str
    def __init__(self, openai_api_key: _Optional[str] = ..., openai_base_url: _Optional[str] = ..., anthropic_api_key: _Optional[str] = ..., anthropic_base_url: _Optional[str] = ..., gemini_api_key: _Optional[str] = ..., gemini_base_url: _Optional[str] = ..., replicate_api_token: _Optional[str] = ..., replicate_base_url: _Optional[str] = ...) -> None: ...
