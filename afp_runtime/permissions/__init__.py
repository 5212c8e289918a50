"""A permission gate per tool call: a rule table or a function decides, before dispatch, to
allow, deny, ask the person or halt the turn (docs/permissions.md).

``afp.permissions.Rule`` and ``afp.permissions.Verdict`` are what an agent definition and a gate
function use.
"""

from afp_runtime.permissions._extension import (
    ROW_KIND,
    PermissionRow,
    PermissionsExtension,
    validate_permission_row,
)
from afp_runtime.permissions._rules import (
    DECISIONS,
    Decision,
    GateFn,
    Permissions,
    Rule,
    Verdict,
    check_rules,
    matches,
)

__all__ = [
    "DECISIONS",
    "Decision",
    "GateFn",
    "PermissionRow",
    "Permissions",
    "PermissionsExtension",
    "ROW_KIND",
    "Rule",
    "Verdict",
    "check_rules",
    "matches",
    "validate_permission_row",
]
