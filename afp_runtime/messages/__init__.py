"""Messages: the value types every layer shares, and the one canonical encoder for digests."""

from afp_runtime.messages.canonical import (
    canonical_json,
    fingerprint,
    message_body,
    message_from_body,
    salt,
    salted,
    sha256_hex,
)
from afp_runtime.messages.message import (
    Message,
    Role,
    ToolCall,
    assistant,
    chars,
    tool_result,
    user,
)
from afp_runtime.messages.usage import (
    MAX_TOKEN_COUNT,
    Cost,
    ModelParams,
    ModelReply,
    ModelRequest,
    StopReason,
    ToolChoice,
    ToolSchema,
    Usage,
)

__all__ = [
    "Cost",
    "MAX_TOKEN_COUNT",
    "Message",
    "ModelParams",
    "ModelReply",
    "ModelRequest",
    "Role",
    "StopReason",
    "ToolCall",
    "ToolChoice",
    "ToolSchema",
    "Usage",
    "assistant",
    "canonical_json",
    "chars",
    "fingerprint",
    "message_body",
    "message_from_body",
    "salt",
    "salted",
    "sha256_hex",
    "tool_result",
    "user",
]
