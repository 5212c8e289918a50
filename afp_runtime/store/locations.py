"""How a store's location is shown: a URL's password never is (docs/storage.md#store-locations)."""

from __future__ import annotations

import re

_USERINFO_PASSWORD = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@]*):[^@/?#]*@")
_QUERY_PASSWORD = re.compile(r"(?P<key>[?&]password=)[^&#]*", re.IGNORECASE)


def masked(location: str) -> str:
    """``location`` with any password replaced by ``***`` (``user:***@host``,
    ``?password=***``); a file path is returned as it is."""
    shown = _USERINFO_PASSWORD.sub(r"\g<head>:***@", location)
    return _QUERY_PASSWORD.sub(r"\g<key>***", shown)
