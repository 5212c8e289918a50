"""The OpenAPI document, written from the table of operations in ``_operations``
(docs/api.md#the-openapi-document).

The handlers take every parameter as text and check it themselves, so that a bad one is an error
in this API's own shape; the framework's generated document could not say what they accept.
Schemas of the answers are generated from the same Structs the handlers return; errors are the
one ``Error`` component on every operation.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import msgspec

from afp_runtime.api._bodies import body_schemas
from afp_runtime.api._operation_parts import (
    ALWAYS,
    SERVER_SENT_EVENT,
    STATUS_TEXT,
    Operation,
)
from afp_runtime.api._operations import OPERATIONS
from afp_runtime.api._problems import ErrorBody

_EXAMPLES = "openapi_examples.json"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def captured_examples() -> dict[str, Any]:
    """Answers of a real ``afp serve`` by operation id (``scripts/openapi_examples.py``)."""
    text = resources.files("afp_runtime.api").joinpath(_EXAMPLES).read_text(encoding="utf-8")
    examples: dict[str, Any] = msgspec.json.decode(text)
    return examples


def example_of(op: Operation, captured: dict[str, Any]) -> Any:
    """The operation's example: a captured answer, else the table's own."""
    return captured.get(op.operation_id, op.example)


def _responses(
    op: Operation, refs: dict[Any, dict[str, Any]], captured: dict[str, Any]
) -> dict[str, Any]:
    example = example_of(op, captured)
    content: dict[str, Any] | None
    if op.response is None:  # a 204: no body
        content = None
    elif op.stream:
        content = {"text/event-stream": {"schema": _ref("ServerSentEvent"), "example": example}}
    elif op.text is not None:
        content = {op.text: {"schema": {"type": "string"}, "example": example}}
    else:
        content = {"application/json": {"schema": refs[op.response], "example": example}}
    success: dict[str, Any] = {"description": STATUS_TEXT[op.status]}
    if content is not None:
        success["content"] = content
    if op.links:
        success["links"] = op.links
    responses: dict[str, Any] = {str(op.status): success}
    for status, text in op.also.items():
        responses[str(status)] = {"description": text, "content": content}
    error = {"application/json": {"schema": _ref("Error")}}
    for status in sorted({*ALWAYS, *op.errors}):
        responses[str(status)] = {"description": STATUS_TEXT[status], "content": error}
    return responses


def _operation(
    op: Operation, refs: dict[Any, dict[str, Any]], captured: dict[str, Any]
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "tags": [op.tag],
        "parameters": list(op.params),
        "responses": _responses(op, refs, captured),
    }
    if op.body is not None:
        document["requestBody"] = {
            "required": op.body_required,
            "content": {"application/json": {"schema": _ref(op.body.__name__)}},
        }
    return document


def document(*, version: str, title: str = "afp-runtime local API") -> dict[str, Any]:
    """The whole OpenAPI 3.1 document."""
    kinds = sorted(
        {
            op.response
            for op in OPERATIONS
            if not op.stream and op.text is None and op.response is not None
        },
        key=repr,
    )
    bodies = [op.body for op in OPERATIONS if op.body is not None]
    schemas, components = msgspec.json.schema_components(
        [*kinds, *bodies, ErrorBody], ref_template="#/components/schemas/{name}"
    )
    refs = dict(zip([*kinds, *bodies, ErrorBody], schemas, strict=True))
    components["Error"] = components.pop("ErrorBody")
    components["ServerSentEvent"] = SERVER_SENT_EVENT
    components["Error"]["description"] = "Every error answer: a stable code and a message."
    body_schemas(components)
    # ``expand=true`` on a run's commits shows a history write's messages in place of its
    # reference (api/runs.py), so the documented value admits them too.
    components["HistoryWrite"]["properties"]["value"]["anyOf"].append(
        {"type": "array", "items": _ref("Message")}
    )
    captured = captured_examples()
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op, refs, captured)
    whole = {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
    for generated, shown in _SHOWN_AS.items():
        components[generated]["title"] = shown
    pages = {name: _page_name(name) for name in components if name.startswith("Page_")}
    return _renamed(whole, {**pages, **_SHOWN_AS})


# The doors answer a served view, an epoch entry and a conformance report with their
# ``reasons`` (api/shapes.py); the document keeps the names clients know them by.
_SHOWN_AS = {
    "ExplainedView": "ServedView",
    "ExplainedEpoch": "EpochEntry",
    "ExplainedReport": "ConformanceReport",
}


def _page_name(generated: str) -> str:
    """``Page_AgentView_`` as ``AgentViewPage``; a page of free-form objects is ``RecordPage``."""
    inner = generated.removeprefix("Page_").removesuffix("_")
    return f"{_SHOWN_AS.get(inner, inner)}Page" if inner.isidentifier() else "RecordPage"


def _renamed(node: Any, names: dict[str, str]) -> Any:
    """``node`` with the components in ``names`` renamed: their keys under
    ``components.schemas`` and every ``$ref`` to them."""
    prefix = "#/components/schemas/"
    if isinstance(node, list):
        return [_renamed(item, names) for item in node]
    if not isinstance(node, dict):
        return node
    renamed: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str) and value.startswith(prefix):
            value = prefix + names.get(value.removeprefix(prefix), value.removeprefix(prefix))
        elif key == "schemas" and isinstance(value, dict):
            value = {names.get(name, name): schema for name, schema in value.items()}
        renamed[key] = _renamed(value, names)
    return renamed
