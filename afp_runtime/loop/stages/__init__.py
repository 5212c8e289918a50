"""The stages of an iteration, one module each, as functions over a ``Run``."""

from afp_runtime.loop.stages.call_model import call_model
from afp_runtime.loop.stages.context import context
from afp_runtime.loop.stages.final import final
from afp_runtime.loop.stages.halt import halt
from afp_runtime.loop.stages.output_retry import output_retry
from afp_runtime.loop.stages.receipt import receipt
from afp_runtime.loop.stages.seed import seed
from afp_runtime.loop.stages.tool_calls import settle_answers, tool_calls
from afp_runtime.loop.stages.window import window
from afp_runtime.loop.stages.wrap_up import wrap_up

__all__ = [
    "call_model",
    "context",
    "final",
    "halt",
    "output_retry",
    "receipt",
    "seed",
    "settle_answers",
    "tool_calls",
    "window",
    "wrap_up",
]
