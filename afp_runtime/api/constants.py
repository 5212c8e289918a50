"""The API's fixed numbers, importable without the server stack."""

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MIN_TOKEN_CHARS = 32
MAX_BODY_CEILING = 8 * 1024 * 1024
DEFAULT_MAX_BODY_BYTES = 262_144
DEFAULT_KEEPALIVE_S = 15.0
DEFAULT_MAX_STREAMS = 16
TEXT_LIMIT = 32_000
"""Code points of an inbox message's text."""
SENDER_LIMIT = 128
"""Code points of a ``from`` principal."""
MAX_SERVED_PAGE = 50
"""Served views per page (each can be large)."""
INBOX_STATUSES = (
    "queued",
    "running",
    "paused",
    "stalled",
    "held",
    "answered",
    "halted",
    "dismissed",
)
QUESTION_STATUSES = ("open", "answered", "abandoned", "unsettled", "all")
ANSWER_LIMIT = 4_096
"""Code points of a text answer (the host's rule: ``afp_runtime/agents/checkins.py``)."""
NOTE_LIMIT = 4_096
"""Code points of an approval's note (the host's rule, as above)."""
INTERRUPTED_CONTINUES = (
    "a host that runs this agent (`afp serve`) resumes the cut-off turn when it starts, "
    "or `afp run CONFIG` finishes it here"
)
"""What continues an ``interrupted`` agent (its summary's ``continuesWith``)."""
