"""Observation texts: deterministic, our own words, naming the tool, never a traceback."""

from __future__ import annotations

import pytest

from afp_runtime.tools import (
    PROBLEM_LIMIT,
    declined_text,
    error_text,
    interrupted_text,
    invalid_args_text,
    not_dispatched_text,
    refused_text,
    timeout_text,
    truncation_note,
    unencodable_text,
    unknown_tool_text,
)


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("cannot render")


@pytest.mark.parametrize(
    "text",
    [
        not_dispatched_text("probe"),
        interrupted_text("probe"),
        declined_text("probe"),
        refused_text("probe", "it asks for a future time."),
        timeout_text("probe", 2.5),
        unencodable_text("probe", "bytes"),
        invalid_args_text("probe", ["a: required property missing"]),
        error_text("probe", KeyError("k")),
    ],
)
def test_every_text_names_the_tool(text: str) -> None:
    """Every per-call observation names the tool it is about."""
    assert '"probe"' in text


def test_texts_are_deterministic() -> None:
    """The same inputs give the same text."""
    assert error_text("t", ValueError("x")) == error_text("t", ValueError("x"))
    assert unknown_tool_text("t", {"b", "a"}) == unknown_tool_text("t", ["a", "b"])


def test_error_text_without_message() -> None:
    """An exception with no message still gives its type and says there was no message."""
    assert error_text("t", ValueError()) == 'The tool "t" failed with ValueError (no message).'


def test_error_text_survives_a_failing_str() -> None:
    """An exception whose __str__ fails still gives an error observation with its type."""
    assert "Unprintable" in error_text("t", Unprintable())


def test_invalid_args_lists_at_most_the_limit() -> None:
    """An invalid-args text lists the first problems and counts the rest."""
    problems = [f"p{i}: wrong" for i in range(PROBLEM_LIMIT + 3)]
    text = invalid_args_text("t", problems)
    assert f"p{PROBLEM_LIMIT - 1}: wrong" in text
    assert f"p{PROBLEM_LIMIT}: wrong" not in text
    assert text.endswith("and 3 more problems")


def test_unknown_tool_without_tools() -> None:
    """With no tools at all, the unknown-tool text says none are available."""
    assert "No tools are available" in unknown_tool_text("x", [])


def test_long_model_made_name_is_cut() -> None:
    """A very long unknown name is cut in the text."""
    assert len(unknown_tool_text("n" * 5_000, ["a"])) < 200


def test_truncation_note_gives_both_lengths() -> None:
    """The truncation note states how much was kept and the original length."""
    note = truncation_note(1_000, 10_000)
    assert "1,000" in note
    assert "10,000" in note
