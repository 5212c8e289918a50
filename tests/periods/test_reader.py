"""Reader output validation and the ``TimeParts`` wire shapes (docs/time.md#readers)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from afp_runtime.errors import TimeReaderError
from afp_runtime.time._parts import FixedDate, NumericDate, RangeSide, Relative, TimeParts, Wall
from afp_runtime.time._reader import (
    MAX_MENTIONS,
    MAX_PARSES,
    Mention,
    Reading,
    RefusedMention,
    validate_reading,
)

TEXT = "any errors yesterday between 8 and 9 AM PST?"
YESTERDAY: dict[str, Any] = {"relative": {"unit": "day", "offset": -1}}


def _mention(quote: str = "yesterday", *parses: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"quote": quote, "parses": list(parses or [YESTERDAY]), **more}


def _one(raw_mention: Any, text: str = TEXT) -> Mention | RefusedMention:
    checked = validate_reading(text, {"mentions": [raw_mention]})
    assert len(checked) == 1
    return checked[0]


MALFORMED = RefusedMention(refused="malformed")


class TestAccepted:
    """Output in the documented shapes passes unchanged."""

    def test_decoded_json(self) -> None:
        """A decoded-JSON mention passes and comes back as a typed ``Mention``."""
        assert _one(_mention()) == Mention(
            quote="yesterday", parses=(TimeParts(relative=Relative(unit="day", offset=-1)),)
        )

    def test_reading_struct(self) -> None:
        """A ``Reading`` passes as it is."""
        reading = Reading(
            mentions=(
                Mention(
                    quote="yesterday", parses=(TimeParts(relative=Relative(unit="day", offset=-1)),)
                ),
            )
        )
        assert validate_reading(TEXT, reading) == reading.mentions

    def test_json_text(self) -> None:
        """JSON text is decoded and checked the same way."""
        raw = b'{"mentions":[{"quote":"yesterday","parses":[],"problem":"unreadable"}]}'
        assert validate_reading(TEXT, raw) == (
            Mention(quote="yesterday", parses=(), problem="unreadable"),
        )

    def test_no_mentions(self) -> None:
        """``{mentions: []}`` is a valid reading with nothing in it."""
        assert validate_reading(TEXT, {"mentions": []}) == ()

    def test_every_part_kind(self) -> None:
        """A parse using every part (model-reader parts included) passes."""
        parse = {
            "date": {"kind": "numeric", "fields": [10, 9, 26], "yearDigits": 2},
            "zoneToken": "PST",
            "relative": {"unit": "day", "offset": -1},
            "partOfDay": "morning",
            "anchor": "previous",
            "rangeOf": [
                {"wall": {"h": 8}},
                {"wall": {"h": 9, "meridiem": "am"}, "partOfDay": "noon"},
            ],
        }
        checked = _one(_mention("yesterday between 8 and 9 AM PST", parse))
        assert isinstance(checked, Mention)
        assert checked.parses[0].part_of_day == "morning"
        assert checked.parses[0].anchor == "previous"

    def test_four_parses(self) -> None:
        """Four parses are the most a mention may have, and they pass."""
        parses = [{"wall": {"h": h, "meridiem": "am"}} for h in (8, 9, 10, 11)]
        checked = _one(_mention("8", *parses))
        assert isinstance(checked, Mention)
        assert len(checked.parses) == MAX_PARSES == 4

    def test_order_and_indexes_kept(self) -> None:
        """Refused mentions keep their place, so indexes stay those of the reader's output."""
        checked = validate_reading(
            TEXT, {"mentions": [_mention("tomorrow"), _mention(), {"quote": 3}]}
        )
        assert checked == (
            RefusedMention(refused="quote-not-in-text"),
            checked[1],
            MALFORMED,
        )
        assert isinstance(checked[1], Mention)


class TestRefused:
    """Each failed check refuses its mention with the table's reason."""

    @pytest.mark.parametrize("quote", ["tomorrow", "Yesterday", "yesterday?", "yester\u200bday"])
    def test_quote_not_in_text(self, quote: str) -> None:
        """A quote that is not character for character in the text is ``quote-not-in-text``."""
        assert _one(_mention(quote)) == RefusedMention(refused="quote-not-in-text")

    def test_quote_check_comes_first(self) -> None:
        """A quote not in the text is ``quote-not-in-text`` even when its parts are malformed."""
        raw = _mention("tomorrow", {"wall": {"h": 99}})
        assert _one(raw) == RefusedMention(refused="quote-not-in-text")

    @pytest.mark.parametrize(
        "raw",
        [
            "yesterday",
            None,
            {"parses": [YESTERDAY]},
            {"quote": 3, "parses": [YESTERDAY]},
            {"quote": "", "parses": [YESTERDAY]},
            {"quote": "yesterday"},
            {"quote": "yesterday", "parses": None},
            {"quote": "yesterday", "parses": [YESTERDAY], "extra": 1},
            {"quote": "yesterday", "parses": [YESTERDAY], "problem": "vague"},
        ],
        ids=[
            "not-an-object",
            "null",
            "no-quote",
            "quote-not-text",
            "empty-quote",
            "no-parses",
            "null-parses",
            "unknown-key",
            "unknown-problem",
        ],
    )
    def test_malformed_mention(self, raw: Any) -> None:
        """A mention not shaped ``{quote, parses, problem?}`` is ``malformed``."""
        assert _one(raw) == MALFORMED

    def test_problem_with_parses(self) -> None:
        """``problem: unreadable`` next to a parse is ``malformed``."""
        assert _one(_mention(problem="unreadable")) == MALFORMED

    def test_empty_parses_without_problem(self) -> None:
        """Empty ``parses`` without ``problem: unreadable`` is ``malformed``."""
        assert _one({"quote": "yesterday", "parses": []}) == MALFORMED

    @pytest.mark.parametrize(
        "parse",
        [
            {},
            {"when": "now"},
            {"wall": {"h": 24}},
            {"wall": {"h": 8, "m": 60}},
            {"wall": {"h": 8, "s": 5}},
            {"wall": {"h": 13, "meridiem": "pm"}},
            {"wall": {"h": 0, "meridiem": "am"}},
            {"wall": {"h": 8, "meridiem": "am", "clock": "24h"}},
            {"wall": {"h": 8, "meridiem": "AM"}},
            {"wall": {"h": "8"}},
            {"wall": {"h": True}},
            {"wall": {"h": 8.0}},
            {"wall": {"h": 8, "clock": "12h"}},
            {"date": {"fields": [10, 9]}},
            {"date": {"kind": "roman", "fields": [10, 9]}},
            {"date": {"kind": "numeric", "fields": [10]}},
            {"date": {"kind": "numeric", "fields": [1, 2, 3, 4], "yearDigits": 2}},
            {"date": {"kind": "numeric", "fields": [10, 9, 26]}},
            {"date": {"kind": "numeric", "fields": [10, 9], "yearDigits": 2}},
            {"date": {"kind": "numeric", "fields": [10, 9, 26], "yearDigits": 3}},
            {"date": {"kind": "numeric", "fields": [10, 9, 26], "yearDigits": 4}},
            {"date": {"kind": "numeric", "fields": [10, 2026, 9], "yearDigits": 4}},
            {"date": {"kind": "numeric", "fields": [10, 9, 126], "yearDigits": 2}},
            {"date": {"kind": "numeric", "fields": [-1, 9]}},
            {"date": {"kind": "fixed", "month": 13, "day": 1}},
            {"date": {"kind": "fixed", "month": 2, "day": 0}},
            {"date": {"kind": "fixed", "month": 2, "day": 32}},
            {"date": {"kind": "fixed", "year": 0, "month": 2, "day": 3}},
            {"relative": {"unit": "day"}},
            {"relative": {"unit": "day", "offset": -1, "count": 1}},
            {"relative": {"unit": "hour", "offset": -1}},
            {"relative": {"unit": "month", "count": 3}},
            {"relative": {"unit": "second", "count": 30}},
            {"relative": {"unit": "minute", "count": 0}},
            {"relative": {"unit": "minute", "count": 100001}},
            {"relative": {"unit": "day", "offset": 100001}},
            {"partOfDay": "dawn"},
            {"anchor": "next"},
            {"zoneToken": ""},
            {"zoneToken": "   "},
            {"zoneToken": 7},
            {"rangeOf": []},
            {"rangeOf": [{"wall": {"h": 8}}]},
            {"rangeOf": [{"wall": {"h": 8}}, {"wall": {"h": 9}}, {"wall": {"h": 10}}]},
            {"rangeOf": [{"wall": {"h": 8}}, {}]},
            {"rangeOf": [{"wall": {"h": 8}}, {"anchor": "previous"}]},
            {"wall": {"h": 8}, "rangeOf": [{"wall": {"h": 8}}, {"wall": {"h": 9}}]},
        ],
    )
    def test_malformed_parts(self, parse: dict[str, Any]) -> None:
        """Parts outside the documented shapes refuse the mention ``malformed``."""
        assert _one(_mention("yesterday", parse)) == MALFORMED

    @pytest.mark.parametrize(
        "parse",
        [
            {"zoneToken": "America/Los_Angeles"},
            {"rangeOf": [{"wall": {"h": 8}, "zoneToken": "UTC"}, {"wall": {"h": 9}}]},
        ],
    )
    def test_zone_token_not_in_quote(self, parse: dict[str, Any]) -> None:
        """A ``zoneToken`` that is not in the mention's quote ("as typed") is ``malformed``."""
        assert _one(_mention("between 8 and 9 AM PST", parse)) == MALFORMED

    def test_zone_token_in_quote(self) -> None:
        """The same parse with a token from the quote passes, so the check is on the token."""
        parse = {"zoneToken": "PST", "rangeOf": [{"wall": {"h": 8}}, {"wall": {"h": 9}}]}
        assert isinstance(_one(_mention("between 8 and 9 AM PST", parse)), Mention)

    def test_five_parses(self) -> None:
        """A mention with more than four parses is refused ``malformed`` as a whole."""
        parses = [{"wall": {"h": h, "meridiem": "am"}} for h in (8, 9, 10, 11, 12)]
        assert _one(_mention("8", *parses)) == MALFORMED

    def test_surplus_mentions(self) -> None:
        """Mentions after the sixteenth are refused ``malformed``; the first sixteen pass."""
        checked = validate_reading(TEXT, {"mentions": [_mention()] * (MAX_MENTIONS + 2)})
        assert MAX_MENTIONS == 16
        assert len(checked) == 18
        assert all(isinstance(c, Mention) for c in checked[:16])
        assert checked[16:] == (MALFORMED, MALFORMED)


class TestNotShaped:
    """Output not shaped ``{mentions: [...]}`` raises ``TimeReaderError``."""

    @pytest.mark.parametrize(
        "raw",
        [
            {"x": 1},
            {},
            None,
            [],
            [_mention()],
            "yesterday",
            b"{not json",
            b'{"x": 1}',
            {"mentions": {}},
            {"mentions": "yesterday"},
            {"mentions": None},
            {"mentions": [], "extra": 1},
            42,
        ],
    )
    def test_raises(self, raw: Any) -> None:
        """The whole output is refused with ``TimeReaderError`` (error kind ``time-reader``)."""
        with pytest.raises(TimeReaderError) as caught:
            validate_reading(TEXT, raw)
        assert caught.value.error_kind == "time-reader"
        assert "mentions" in str(caught.value)


class TestWireShapes:
    """The wire shapes of ``TimeParts`` chosen in ``parts.py``."""

    def test_full_parts_encode(self) -> None:
        """Keys are camelCase, absent ones omitted; dates are tagged on ``kind``."""
        parts = TimeParts(
            date=NumericDate(fields=(10, 9, 26), year_digits=2),
            zone_token="PST",
            range_of=(RangeSide(wall=Wall(h=8)), RangeSide(wall=Wall(h=8, m=40, meridiem="am"))),
        )
        assert msgspec.json.decode(msgspec.json.encode(parts)) == {
            "date": {"kind": "numeric", "fields": [10, 9, 26], "yearDigits": 2},
            "zoneToken": "PST",
            "rangeOf": [{"wall": {"h": 8}}, {"wall": {"h": 8, "m": 40, "meridiem": "am"}}],
        }

    def test_fixed_date_and_lookback(self) -> None:
        """A fixed date encodes ``{kind: fixed, month, day, year?}``; a span ``{unit, count}``."""
        assert msgspec.json.decode(msgspec.json.encode(FixedDate(month=9, day=29))) == {
            "kind": "fixed",
            "month": 9,
            "day": 29,
        }
        span = Relative(unit="hour", count=24)
        assert msgspec.json.decode(msgspec.json.encode(span)) == {"unit": "hour", "count": 24}
        assert span.is_lookback and not Relative(unit="day", offset=0).is_lookback

    def test_round_trip(self) -> None:
        """Decoding the encoded parts gives equal parts."""
        parts = TimeParts(
            date=FixedDate(year=2026, month=10, day=9),
            wall=Wall(h=8, m=0, clock="24h"),
            zone_token="-07:00",
        )
        assert msgspec.json.decode(msgspec.json.encode(parts), type=TimeParts) == parts

    @pytest.mark.parametrize(
        "build",
        [
            lambda: Wall(h=13, meridiem="pm"),
            lambda: Relative(unit="week", offset=1),
            lambda: NumericDate(fields=(10, 9, 26)),
            lambda: FixedDate(month=0, day=1),
            lambda: TimeParts(),
            lambda: RangeSide(),
            lambda: Mention(quote="x", parses=()),
            lambda: Mention(quote="", parses=(), problem="unreadable"),
        ],
    )
    def test_values_check_themselves(self, build: Any) -> None:
        """A value built in Python with broken rules raises ``ValueError`` at once."""
        with pytest.raises(ValueError):
            build()
