"""Definition-time checks of an agent's window settings (docs/window.md#definition-time-validation,
docs/window.md#last-tool-result-pin).

They run when an agent is defined, never mid-run. Refusing a second strategy is the agent
definition's job (it knows which field set the first one); these checks look at one value.

Details settled here, beyond what docs/window.md#definition-time-validation states:

* A class (even one with a ``name`` and an async ``plan``) is refused like an uncalled factory:
  the definition needs an instance.
* ``billing``, when present and not None, must be a ``Billing``; anything else is refused.
* The ``WindowConfigError`` of these checks names the option (``window`` or
  ``keep_last_tool_results``) and the value; ``factory`` is not set, since no factory ran.
"""

from __future__ import annotations

import inspect
from typing import Literal

import msgspec

from afp_runtime.errors import WindowConfigError, shown
from afp_runtime.window.traits import traits_of
from afp_runtime.window.visit import Billing


def _refuse(option: str, value: object, why: str) -> WindowConfigError:
    return WindowConfigError(
        f"{option} = {shown(value)} is refused: {why}", option=option, value=shown(value)
    )


def validate_strategy(
    obj: object, *, agent_model_port: object = None, agent_model: str | None = None
) -> None:
    """Check that ``obj`` can serve as an agent's window strategy.

    Args:
        obj: the value given as ``window=``.
        agent_model_port: the agent's own Model port, if known.
        agent_model: the agent's model id, if known.

    Raises:
        WindowConfigError: ``obj`` is None, a mapping, a class or an uncalled factory, lacks a
            non-empty ``str`` ``name`` or an async ``plan``, has a ``billing`` that is not a
            ``Billing``, or bills the agent's own port (the same object) with the agent's own
            model id (option ``window``).
    """
    option = "window"
    if obj is None:
        raise _refuse(option, obj, "give a strategy object such as sliding_window(...)")
    if isinstance(obj, dict):
        raise _refuse(option, obj, "a dict is not a strategy; call a strategy factory")
    if isinstance(obj, type):
        raise _refuse(option, obj, "a class is not a strategy; give an instance")
    name = getattr(obj, "name", None)
    plan = getattr(obj, "plan", None)
    if (inspect.isfunction(obj) or inspect.isbuiltin(obj)) and plan is None:
        raise _refuse(
            option,
            obj,
            "it is a function, not a strategy; call the factory with its options, "
            "e.g. sliding_window(keep_recent_turns=6)",
        )
    if not isinstance(name, str) or not name:
        raise _refuse(option, obj, "a strategy needs a non-empty str attribute 'name'")
    if not inspect.iscoroutinefunction(plan):
        raise _refuse(option, obj, "a strategy needs an async method plan(visit)")
    billing = traits_of(obj).billing
    if billing is None or billing is msgspec.UNSET:
        return
    if not isinstance(billing, Billing):
        raise _refuse(option, obj, f"its billing must be a Billing or None, not {billing!r}")
    if (
        agent_model_port is not None
        and billing.provider is agent_model_port
        and billing.model == agent_model
    ):
        raise _refuse(
            option,
            obj,
            f"its model calls would go to the agent's own model port with the agent's own "
            f"model {billing.model!r}; use another model id or another port",
        )


def validate_keep_last_tool_results(value: object) -> int | Literal[False]:
    """Check the ``keep_last_tool_results`` agent option: an int >= 0, or False
    (docs/window.md#last-tool-result-pin).

    ``False`` and ``0`` both switch the last-tool-result pin off. ``True`` is refused, like
    every other non-int (``True`` is an ``int`` in Python, so bool is checked first).

    Returns:
        The value, unchanged.

    Raises:
        WindowConfigError: the value is not an int >= 0 nor False (names the option and value).
    """
    if value is False:
        return False
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _refuse("keep_last_tool_results", value, "it must be an int >= 0, or False")
    return value
