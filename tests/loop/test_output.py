"""Typed final answers (docs/loop.md#typed-answers): the answer is decoded against the agent's
output schema, retried with the precise problem, and returned as the typed value."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

import afp_runtime as afp
from afp_runtime.errors import AgentDefinitionError
from afp_runtime.testing import answer
from afp_runtime.window.texts import OUTPUT_RETRY_PREFIX


class Order(msgspec.Struct, frozen=True):
    order: str
    quantity: int


@dataclasses.dataclass
class Parcel:
    weight_kg: float
    fragile: bool = False


async def run(tmp_path: Path, replies: list[str], **options: Any) -> tuple[Any, afp.ServedView]:
    """One turn of an agent answering ``replies`` in order; the result and the last call's
    served view."""
    model = afp.ScriptedModel([answer(text) for text in replies])
    agent = afp.Agent("clerk", model, **options)
    async with afp.open(tmp_path / "afp.db") as store:
        result = await store.run(agent, "what should we order?")
        epochs = await store.epochs(result.run_id)
        view = await store.served(result.run_id, len(epochs))
    return result, view


async def test_a_struct_answer_is_decoded_and_returned_typed(tmp_path: Path) -> None:
    """A valid answer (a fenced block is fine) is the Struct instance; the request carried the
    schema as a system piece."""
    result, view = await run(
        tmp_path, ['```json\n{"order": "A1", "quantity": 3}\n```'], output=Order
    )
    assert result.status == "answered"
    assert result.value == Order(order="A1", quantity=3)
    assert result.output_error is None
    assert "quantity" in view.system.text and "JSON schema" in view.system.text


async def test_a_refused_answer_is_retried_with_what_was_wrong(tmp_path: Path) -> None:
    """The model is told precisely what was wrong, then its corrected answer is the value."""
    result, view = await run(
        tmp_path,
        ['{"order": "A1", "quantity": "three"}', '{"order": "A1", "quantity": 3}'],
        output=Order,
    )
    assert result.value == Order(order="A1", quantity=3)
    retry = [m for m in view.messages.as_sent if m.content.startswith(OUTPUT_RETRY_PREFIX)]
    assert len(retry) == 1
    assert "Expected `int`, got `str` - at `$.quantity`" in retry[0].content
    assert "retry 1 of 2" in retry[0].content


async def test_after_the_retries_the_outcome_names_the_failure(tmp_path: Path) -> None:
    """Past ``output_retries`` the turn answers with the text and a named failure, no value."""
    result, _ = await run(
        tmp_path, ["not json", "still not", "nope"], output=Order, output_retries=2
    )
    assert result.status == "answered" and result.answer == "nope"
    assert result.value is msgspec.UNSET
    assert result.output_error is not None
    assert result.output_error.kind == "output-invalid"
    assert result.output_error.attempts == 3
    assert "not JSON" in result.output_error.problem


async def test_a_dataclass_and_a_json_schema_work_too(tmp_path: Path) -> None:
    """A dataclass gives its instance; a JSON schema gives the validated JSON value."""
    parcel, _ = await run(tmp_path, ['{"weight_kg": 2.5}'], output=Parcel)
    assert parcel.value == Parcel(weight_kg=2.5)
    schema = {
        "type": "object",
        "properties": {"sku": {"type": "string"}},
        "required": ["sku"],
        "additionalProperties": False,
    }
    other = tmp_path / "other"
    await anyio.Path(other).mkdir()
    valued, view = await run(other, ['{"sku": 7}', '{"sku": "B2"}'], output=schema)
    assert valued.value == {"sku": "B2"}
    (retry,) = [m for m in view.messages.as_sent if m.content.startswith(OUTPUT_RETRY_PREFIX)]
    assert "sku" in retry.content


def test_an_output_that_is_no_schema_is_refused() -> None:
    """Only a Struct class, a dataclass or a usable JSON schema; retries are an int >= 0."""
    model = afp.ScriptedModel([answer("hi")])
    with pytest.raises(AgentDefinitionError, match="output must be"):
        afp.Agent("a", model, output=int)
    with pytest.raises(AgentDefinitionError, match="outputRetries"):
        afp.Agent("a", model, output=Order, output_retries=-1)
    with pytest.raises(AgentDefinitionError, match="not a usable JSON schema"):
        afp.Agent("a", model, output={"type": 7})


async def test_an_armed_agent_decodes_the_answer_as_delivered(tmp_path: Path) -> None:
    """With findings armed, a ``_findings`` member declared on the answer is peeled before the
    answer is decoded, so a strict schema accepts it without a retry."""
    schema = {
        "type": "object",
        "properties": {"sku": {"type": "string"}},
        "required": ["sku"],
        "additionalProperties": False,
    }
    result, view = await run(
        tmp_path,
        ['{"sku": "B2", "_findings": null}'],
        output=schema,
        findings=afp.FindingsConfig(),
    )
    assert result.value == {"sku": "B2"}
    assert not [m for m in view.messages.as_sent if m.content.startswith(OUTPUT_RETRY_PREFIX)]
