"""The inspector's template environment, and the error page every refused page request gets
(docs/inspector.md#errors). Imports nothing of the API, so the API's error handlers and the
guard can render through it."""

from __future__ import annotations

from pathlib import Path

import jinja2

__all__ = ["ENVIRONMENT", "problem_page", "shown", "wants_html"]

_HERE = Path(__file__).parent
# The templates, read once at import (a render never touches the disk).
_TEMPLATES = {path.name: path.read_text("utf-8") for path in (_HERE / "templates").glob("*.html")}
# C0 controls have pictures (U+2400..); the C1 controls and the bidirectional formatting
# characters, which can reverse or reorder the text after them, have none and are shown by
# their code point.
_BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_CONTROLS: dict[int, int | str] = {
    **{code: 0x2400 + code for code in range(32) if code not in (9, 10)},
    127: 0x2421,
    **{code: f"\u27e8U+{code:04X}\u27e9" for code in (*range(0x80, 0xA0), *_BIDI_CONTROLS)},
}
_TITLES = {
    400: "Not understood",
    401: "Sign in first",
    403: "Not allowed",
    404: "Not found",
    405: "Not answered here",
    409: "Not now",
    413: "Too large",
    415: "Not a form",
    422: "Not accepted",
    429: "Too many at once",
}


def shown(value: object) -> object:
    """Text as the page shows it: control characters as their visible pictures (U+2400..),
    C1 controls and bidirectional controls as ``⟨U+202E⟩``, so none can hide or reorder what
    is around it; escaping follows in the template engine."""
    return value.translate(_CONTROLS) if isinstance(value, str) else value


ENVIRONMENT = jinja2.Environment(
    loader=jinja2.DictLoader(_TEMPLATES),
    autoescape=True,
    auto_reload=False,
    finalize=shown,
    undefined=jinja2.StrictUndefined,
)
"""Templates from this package; autoescaping on for every template, undefined names fail."""


def wants_html(path: str, accept: str | None) -> bool:
    """Whether a refused request gets the error page: a page of the inspector (no ``/v1/``
    path) asked for by a browser (``Accept`` names ``text/html``)."""
    return not path.startswith("/v1/") and "text/html" in (accept or "").lower()


def problem_page(
    status: int, code: str, message: str, *, field: str | None, value: str | None
) -> bytes:
    """The error page: what was refused and why, in the API's words, with its code."""
    title = _TITLES.get(status, "Not done" if status < 500 else "The inspector could not answer")
    page = ENVIRONMENT.get_template("problem.html").render(
        status=status,
        title=title,
        code=code,
        message=message,
        field=field,
        value=value,
        signed_in=False,
    )
    return page.encode("utf-8")
