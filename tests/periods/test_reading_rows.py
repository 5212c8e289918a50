"""``read_message`` and the ``time-reading`` rows; ``TimeConfig`` (docs/time.md#the-rule-in-brief,
docs/time.md#reading-what-the-person-wrote, docs/time.md#row-kinds; docs/time.md#how-this-is-tested
cases 1-3, 5, 10)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from afp_runtime.errors import AgentDefinitionError, InvalidValue, TimeReaderError
from afp_runtime.time import TimeConfig, time_config_from_wire, validate_time_row
from afp_runtime.time._clock import TimeClock
from afp_runtime.time._config import time_config_to_wire
from afp_runtime.time._english import ENGLISH_READER_ID, EnglishReader
from afp_runtime.time._policy import OpenChoice, TimePolicy
from afp_runtime.time._reader import ReaderInfo
from afp_runtime.time._reading_rows import TimeReadingRow, read_message
from afp_runtime.time._windows import rows_of_turn, turn_windows_of
from afp_runtime.time._zones import TZDATA_VERSION

LA = "America/Los_Angeles"
CLOCK = TimeClock(now="2026-10-09T15:40:00Z", now_source="inbox", zone=LA, zone_source="agent")
UNKNOWN = TimeClock(
    now="2026-10-09T15:40:00Z", now_source="inbox", zone="UTC", zone_source="unknown"
)
ENGLISH = {"id": "afp/english", "version": "1.0.0", "kind": "rule", "locale": "en-US"}
HEAD = {"kind": "time-reading", "turn": 1, "iteration": 1, "reader": ENGLISH}


def wire(value: Any) -> Any:
    """``value`` as decoded JSON."""
    return msgspec.json.decode(msgspec.json.encode(value))


def rows(
    text: str, clock: TimeClock = CLOCK, config: TimeConfig | None = None, turn: int = 1
) -> list[Any]:
    """The rows of ``text`` as JSON."""
    return wire(read_message(text, clock=clock, config=config or TimeConfig(), turn=turn))


class ScriptedReader:
    """A model-kind reader that returns a fixed output (or raises)."""

    id = "test/scripted"
    version = "0.1"
    locale = "en-US"
    kind = "model"

    def __init__(self, output: object) -> None:
        self.output = output
        self.calls = 0

    def read(self, text: str) -> object:
        """The scripted output."""
        self.calls += 1
        if isinstance(self.output, Exception):
            raise self.output
        return self.output


class TestReadMessage:
    """One row per mention, or a single ``mentions: 0`` row."""

    def test_yesterday_case_1(self) -> None:
        """Case 1: the exact row of "any errors yesterday?"."""
        assert rows("any errors yesterday?") == [
            {
                **HEAD,
                "tzdata": TZDATA_VERSION,
                "mentions": 1,
                "mention": 0,
                "quote": "yesterday",
                "parses": [{"relative": {"unit": "day", "offset": -1}}],
                "candidates": [
                    {
                        "window": {"kind": "range"},
                        "range": {
                            "from": "2026-10-08T00:00:00-07:00",
                            "to": "2026-10-09T00:00:00-07:00",
                        },
                        "zone": LA,
                        "grain": "day",
                        "said": [],
                        "implied": ["year", "month", "zone"],
                        "anchor": "message",
                        "notes": [],
                        "reading": {},
                        "parse": 0,
                    }
                ],
                "choice": {"by": "open", "remaining": [0], "open": ["confirm"]},
            }
        ]

    @pytest.mark.parametrize(
        ("text", "quote"),
        [
            ("anything last week?", "last week"),
            ("what failed yesterday morning?", "yesterday morning"),
            ("errors since Monday?", "since Monday"),
        ],
    )
    def test_unreadable_cases_2_3(self, text: str, quote: str) -> None:
        """Cases 2-3: one unreadable mention, no parses or candidates, ``{by: none, why:
        unreadable}``."""
        (row,) = rows(text)
        assert {k: row[k] for k in ("quote", "parses", "problem", "candidates", "choice")} == {
            "quote": quote,
            "parses": [],
            "problem": "unreadable",
            "candidates": [],
            "choice": {"by": "none", "why": "unreadable"},
        }

    def test_no_mention_case_10(self) -> None:
        """Case 10: "Good morning, any news?" files one row with ``mentions: 0``."""
        assert rows("Good morning, any news?") == [
            {**HEAD, "tzdata": TZDATA_VERSION, "mentions": 0}
        ]

    def test_policy_case_5(self) -> None:
        """Case 5: the agent's policy shapes the filed choice."""
        config = TimeConfig(policy=TimePolicy(date_order="MDY"))
        (row,) = rows("10/09/26 8 AM to 8:40 AM", config=config)
        assert len(row["candidates"]) == 3
        assert row["choice"] == {
            "by": "open",
            "remaining": [0],
            "open": ["confirm"],
            "policy": {"dateOrder": "MDY"},
        }

    def test_zone_question_case_5(self) -> None:
        """Case 5: "PST" with no map files no candidate and ``open [zone]``."""
        (row,) = rows("Show client activity 10/09/26 8 AM to 8:40 AM PST")
        assert row["candidates"] == []
        assert row["choice"] == {"by": "open", "remaining": [], "open": ["zone"]}

    def test_unknown_zone_case_50(self) -> None:
        """Case 50: under an unknown zone "yesterday" waits for a zone."""
        (row,) = rows("any client activity yesterday?", clock=UNKNOWN)
        assert (row["candidates"], row["choice"]) == (
            [],
            {"by": "open", "remaining": [], "open": ["zone"]},
        )

    def test_several_mentions(self) -> None:
        """Each mention gets its own row, numbered in the reader's order."""
        found = rows("today vs yesterday", turn=4)
        assert [(r["turn"], r["mentions"], r["mention"], r["quote"]) for r in found] == [
            (4, 2, 0, "today"),
            (4, 2, 1, "yesterday"),
        ]

    def test_rows_pass_strict_validation_and_windows(self) -> None:
        """The rows pass the ledger's strict time-row check and read as open mentions."""
        found = read_message("today vs last 2 hours", clock=CLOCK, config=TimeConfig(), turn=1)
        for index, row in enumerate(wire(found)):
            validate_time_row(row, index)
        windows = turn_windows_of(rows_of_turn(found, 1), 1)
        assert windows.mentions == 2
        assert [m.readings[0].lookback for m in windows.open] == [None, "2h"]

    def test_round_trip(self) -> None:
        """Rows decode back from their wire form."""
        for text in ("10/09/26 8 AM to 8:40 AM", "last week", "hi", "1:30 AM on 11/01/2026"):
            for row in read_message(text, clock=CLOCK, config=TimeConfig(), turn=2):
                assert msgspec.json.decode(msgspec.json.encode(row), type=TimeReadingRow) == row


class TestReaders:
    """The reader runs once; its output is checked (docs/time.md#readers)."""

    def test_model_reader_row(self) -> None:
        """A configured reader is named in the row and read once."""
        reader = ScriptedReader(
            {
                "mentions": [
                    {"quote": "today", "parses": [{"relative": {"unit": "day", "offset": 0}}]}
                ]
            }
        )
        (row,) = rows("today?", config=TimeConfig(reader=reader))
        assert row["reader"] == {
            "id": "test/scripted",
            "version": "0.1",
            "kind": "model",
            "locale": "en-US",
        }
        assert row["choice"] == {"by": "open", "remaining": [0], "open": ["confirm"]}
        assert reader.calls == 1

    def test_refused_mentions_keep_no_text(self) -> None:
        """A quote not in the text and a malformed mention are filed as refused, with no
        text."""
        reader = ScriptedReader(
            {
                "mentions": [
                    {
                        "quote": "last Tuesday",
                        "parses": [{"relative": {"unit": "day", "offset": -1}}],
                    },
                    {"quote": "today", "parses": [{"wall": {"h": 99}}]},
                    {"quote": "today", "parses": [{"relative": {"unit": "day", "offset": 0}}]},
                ]
            }
        )
        found = rows("what happened today?", config=TimeConfig(reader=reader))
        head = {**HEAD, "reader": found[0]["reader"], "tzdata": TZDATA_VERSION, "mentions": 3}
        assert found[0]["reader"]["id"] == "test/scripted"
        assert found[:2] == [
            {**head, "mention": 0, "refused": "quote-not-in-text"},
            {**head, "mention": 1, "refused": "malformed"},
        ]
        assert found[2]["quote"] == "today"

    def test_output_not_shaped(self) -> None:
        """Output not shaped ``{mentions: [...]}`` raises ``TimeReaderError``."""
        with pytest.raises(TimeReaderError):
            rows("hi", config=TimeConfig(reader=ScriptedReader({"x": 1})))

    def test_reader_failure(self) -> None:
        """A reader that raises is a ``TimeReaderError``, its cause chained."""
        boom = RuntimeError("model endpoint down")
        with pytest.raises(TimeReaderError) as caught:
            rows("hi", config=TimeConfig(reader=ScriptedReader(boom)))
        assert caught.value.__cause__ is boom


class TestRowChecks:
    """The row checks its own shape (docs/time.md#row-kinds)."""

    def _base(self, **more: Any) -> dict[str, Any]:
        return {**HEAD, "tzdata": "2026a", "mentions": 2, "mention": 0, **more}

    @pytest.mark.parametrize(
        "row",
        [
            {**HEAD, "tzdata": "2026a", "mentions": 0, "mention": 0},
            {**HEAD, "tzdata": "2026a", "mentions": 1, "mention": 1, "refused": "malformed"},
            {
                **HEAD,
                "tzdata": "2026a",
                "mentions": 1,
                "mention": 0,
                "refused": "malformed",
                "quote": "x",
            },
            {**HEAD, "tzdata": "2026a", "mentions": 1, "mention": 0, "quote": "x", "parses": []},
            {
                **HEAD,
                "tzdata": "2026a",
                "mentions": 1,
                "mention": 0,
                "quote": "x",
                "parses": [],
                "problem": "unreadable",
                "candidates": [],
                "choice": {"by": "open", "remaining": [0], "open": ["confirm"]},
            },
            {**HEAD, "tzdata": "", "mentions": 0},
            {**HEAD, "turn": 0, "tzdata": "2026a", "mentions": 0},
        ],
    )
    def test_bad_rows(self, row: dict[str, Any]) -> None:
        """Rows of none of the three shapes are refused on decode."""
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert(row, TimeReadingRow)

    def test_said_is_empty(self) -> None:
        """A filed candidate's ``said`` is empty."""
        (row,) = rows("yesterday")
        row["candidates"][0]["said"] = ["yesterday"]
        with pytest.raises(msgspec.ValidationError, match="said"):
            msgspec.convert(row, TimeReadingRow)

    def test_choice_names_candidates(self) -> None:
        """The choice's indices name candidates."""
        (row,) = rows("yesterday")
        row["choice"]["remaining"] = [1]
        with pytest.raises(msgspec.ValidationError, match="remaining"):
            msgspec.convert(row, TimeReadingRow)

    def test_python_construction(self) -> None:
        """Building a bad row in Python raises ``InvalidValue`` naming the field."""
        with pytest.raises(InvalidValue) as caught:
            TimeReadingRow(
                turn=1,
                iteration=1,
                reader=ReaderInfo(**ENGLISH),  # type: ignore[arg-type]
                tzdata="2026a",
                mentions=1,
                mention=0,
                quote="x",
                parses=(),
                problem="unreadable",
                candidates=(),
                choice=OpenChoice(remaining=(), open=("zone",)),
            )
        assert caught.value.context["field"] == "choice"


class TestTimeConfig:
    """``TimeConfig``: camelCase wire keys, snake_case keywords, checked values
    (docs/time.md#the-rule-in-brief)."""

    def test_defaults(self) -> None:
        """No zone, three answer repeats, an asking policy, the English reader."""
        config = TimeConfig()
        assert (config.zone, config.max_answer_repeats, config.policy) == (None, 3, TimePolicy())
        assert isinstance(config.time_reader, EnglishReader)

    def test_toml_table(self) -> None:
        """The TOML example of docs/time.md#the-rule-in-brief decodes, with the policy nested."""
        config = time_config_from_wire(
            {"zone": LA, "maxAnswerRepeats": 3, "policy": {"dateOrder": "MDY"}}
        )
        assert config == TimeConfig(
            zone=LA, max_answer_repeats=3, policy=TimePolicy(date_order="MDY")
        )
        assert time_config_to_wire(config) == {"zone": LA, "policy": {"dateOrder": "MDY"}}

    def test_reader_by_name(self) -> None:
        """A config file can name only the built-in reader."""
        config = time_config_from_wire({"reader": ENGLISH_READER_ID})
        assert isinstance(config.time_reader, EnglishReader)
        assert time_config_to_wire(config) == {"reader": "afp/english"}

    def test_reader_object_not_encoded(self) -> None:
        """A reader object is used as is and left out of the wire form."""
        reader = ScriptedReader({"mentions": []})
        config = TimeConfig(reader=reader, zone="UTC")
        assert config.time_reader is reader
        assert time_config_to_wire(config) == {"zone": "UTC"}

    @pytest.mark.parametrize(
        ("data", "field"),
        [
            ({"zone": "PST"}, "time.zone"),
            ({"maxAnswerRepeats": -1}, "time.maxAnswerRepeats"),
            ({"maxAnswerRepeats": 10**30}, "time.maxAnswerRepeats"),
            ({"maxAnswerRepeats": "3"}, "time.maxAnswerRepeats"),
            ({"max_answer_repeats": 3}, "time.max_answer_repeats"),
            ({"reader": "my/reader"}, "time.reader"),
            ({"reader": {"id": "x"}}, "time.reader"),
            ({"policy": {"dateOrder": "DYM"}}, "time.policy.dateOrder"),
            ({"policy": {"order": "MDY"}}, "time.policy.order"),
        ],
    )
    def test_refused(self, data: dict[str, Any], field: str) -> None:
        """Bad values and unknown keys raise ``AgentDefinitionError`` naming the field."""
        with pytest.raises(AgentDefinitionError) as caught:
            time_config_from_wire(data)
        assert caught.value.context["field"] == field

    def test_python_keywords(self) -> None:
        """Python keyword arguments are snake_case and checked."""
        assert TimeConfig(max_answer_repeats=0).max_answer_repeats == 0
        with pytest.raises(AgentDefinitionError):
            TimeConfig(max_answer_repeats=True)
        with pytest.raises(AgentDefinitionError):
            TimeConfig(reader=object())
