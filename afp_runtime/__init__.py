"""afp-runtime: a durable, auditable runtime for standing LLM agents.

``import afp_runtime as afp`` is all a program needs::

    @afp.tool
    def lookup_order(order_id: str) -> dict[str, str]:
        \"\"\"Look an order up by its id.\"\"\"
        ...

    agent = afp.Agent("support", model, tools=[lookup_order])
    async with afp.open("afp.db") as store:
        result = await store.run(agent, "Where is order 1042?")

Names load when first used, so importing the package costs almost nothing and the HTTP stack
loads only for ``Store.serve`` (docs/python.md#import-cost). The layer packages
(``afp_runtime.loop``, ``afp_runtime.served``...) are the project's own surfaces;
``afp_runtime.errors`` holds every error class and ``afp_runtime.testing`` the fakes (a virtual
clock, scripted replies).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from afp_runtime._lazy import lazy_names as _lazy_names
from afp_runtime._version import VERSION as _VERSION

__version__ = _VERSION

if TYPE_CHECKING:
    from afp_runtime import cost as cost
    from afp_runtime import mcp as mcp
    from afp_runtime import permissions as permissions
    from afp_runtime._embed import Store as Store
    from afp_runtime._embed import TurnEvents as TurnEvents
    from afp_runtime._embed import TurnResult as TurnResult
    from afp_runtime._embed import open as open
    from afp_runtime._embed import run as run
    from afp_runtime.agents import Agent as Agent
    from afp_runtime.agents import load_agents as load_agents
    from afp_runtime.errors import AfpError as AfpError
    from afp_runtime.findings import FindingsConfig as FindingsConfig
    from afp_runtime.host import Host as Host
    from afp_runtime.loop import Event as Event
    from afp_runtime.messages import Message as Message
    from afp_runtime.messages import ModelParams as ModelParams
    from afp_runtime.messages import ModelReply as ModelReply
    from afp_runtime.messages import ModelRequest as ModelRequest
    from afp_runtime.messages import ToolCall as ToolCall
    from afp_runtime.messages import Usage as Usage
    from afp_runtime.models import AnthropicModel as AnthropicModel
    from afp_runtime.models import ExtractiveSummarizer as ExtractiveSummarizer
    from afp_runtime.models import Model as Model
    from afp_runtime.models import OpenAICompatModel as OpenAICompatModel
    from afp_runtime.models import RetryPolicy as RetryPolicy
    from afp_runtime.models import ScriptedModel as ScriptedModel
    from afp_runtime.records import QuestionRow as QuestionRow
    from afp_runtime.schedules import schedule as schedule
    from afp_runtime.served import ConformanceReport as ConformanceReport
    from afp_runtime.served import EpochEntry as EpochEntry
    from afp_runtime.served import ServedView as ServedView
    from afp_runtime.served import ViewDiff as ViewDiff
    from afp_runtime.store import RunRow as RunRow
    from afp_runtime.time import Period as Period
    from afp_runtime.time import TimeConfig as TimeConfig
    from afp_runtime.tools import Tool as Tool
    from afp_runtime.tools import ToolContext as ToolContext
    from afp_runtime.tools import tool as tool
    from afp_runtime.window import FoldedSpan as FoldedSpan
    from afp_runtime.window import sliding_window as sliding_window
    from afp_runtime.window import summarize_oldest as summarize_oldest
    from afp_runtime.window import token_budget as token_budget

# Where each public name lives; it is imported from there at first use.
_HOMES = {
    "AfpError": "afp_runtime.errors",
    "Agent": "afp_runtime.agents",
    "AnthropicModel": "afp_runtime.models",
    "ConformanceReport": "afp_runtime.served",
    "EpochEntry": "afp_runtime.served",
    "Event": "afp_runtime.loop",
    "ExtractiveSummarizer": "afp_runtime.models",
    "FindingsConfig": "afp_runtime.findings",
    "FoldedSpan": "afp_runtime.window",
    "Host": "afp_runtime.host",
    "Message": "afp_runtime.messages",
    "Model": "afp_runtime.models",
    "ModelParams": "afp_runtime.messages",
    "ModelReply": "afp_runtime.messages",
    "ModelRequest": "afp_runtime.messages",
    "OpenAICompatModel": "afp_runtime.models",
    "Period": "afp_runtime.time",
    "QuestionRow": "afp_runtime.records",
    "RetryPolicy": "afp_runtime.models",
    "RunRow": "afp_runtime.store",
    "ScriptedModel": "afp_runtime.models",
    "ServedView": "afp_runtime.served",
    "Store": "afp_runtime._embed",
    "TimeConfig": "afp_runtime.time",
    "Tool": "afp_runtime.tools",
    "ToolCall": "afp_runtime.messages",
    "ToolContext": "afp_runtime.tools",
    "TurnEvents": "afp_runtime._embed",
    "TurnResult": "afp_runtime._embed",
    "Usage": "afp_runtime.messages",
    "ViewDiff": "afp_runtime.served",
    "cost": "afp_runtime.cost",
    "load_agents": "afp_runtime.agents",
    "mcp": "afp_runtime.mcp",
    "open": "afp_runtime._embed",
    "permissions": "afp_runtime.permissions",
    "run": "afp_runtime._embed",
    "schedule": "afp_runtime.schedules",
    "sliding_window": "afp_runtime.window",
    "summarize_oldest": "afp_runtime.window",
    "token_budget": "afp_runtime.window",
    "tool": "afp_runtime.tools",
}

# Every name of ``_HOMES``, and the version.
__all__ = sorted([*_HOMES, "__version__"])


__getattr__ = _lazy_names("afp_runtime", _HOMES, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
