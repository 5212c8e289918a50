"""Who a mutation acts as (docs/api.md#principals-and-tokens): the principal the guard proved
from the request's token, and what it may name in ``from``.

Without tokens there is no principal, and ``from`` is taken as given (single-user local use;
the guard has already held the request to the loopback ``Host``). With one, a ``user``
principal acts as itself: ``from`` left out is its name, ``from`` naming anyone else is 403
``not-your-principal``. An ``admin`` principal may name anyone, or no one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from afp_runtime.api._problems import ApiError
from afp_runtime.api.principals import Principal

__all__ = ["PRINCIPAL_KEY", "acting_as", "owner_to_check", "principal_in"]

PRINCIPAL_KEY = "afp_principal"


def principal_in(scope: Mapping[str, Any]) -> Principal | None:
    """The principal the guard proved for a request (None: the API runs without tokens)."""
    found = scope.get(PRINCIPAL_KEY)
    return found if isinstance(found, Principal) else None


def acting_as(scope: Mapping[str, Any], given: str | None, *, form: bool = False) -> str | None:
    """The sender a post, answer or abandon names: ``given`` (the body's ``from``) checked
    against the caller's principal.

    Raises:
        ApiError: 403 ``not-your-principal`` when a user principal names someone else.
    """
    principal = principal_in(scope)
    if principal is None or principal.admin:
        return given
    if given is None or given == principal.name:
        return principal.name
    field = "Answering as" if form else "from"
    raise ApiError(
        403,
        "not-your-principal",
        f"this token is principal {principal.name!r}; {field} may name only it, not {given!r}",
        field=field,
        value=given,
    )


def owner_to_check(scope: Mapping[str, Any]) -> str | None:
    """The principal a resume or dismiss must be the owner as: a user principal's name; None for
    an admin or without tokens (the operator, who may act on every conversation)."""
    principal = principal_in(scope)
    return principal.name if principal is not None and not principal.admin else None
