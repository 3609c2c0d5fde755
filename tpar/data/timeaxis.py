"""The time axis of a temporal KG: integer time steps <-> human labels (dates, years).

Every fact stores its time as an integer *step*. The axis says what one step is (its granularity
and how many units it spans) and where step 0 lies on the calendar (its origin), so that the model
can work with integer Δt = t - t_q and the user sees "2014-02-02" or "-3 d".
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from tpar.errors import quoted

#: granularity -> short unit used when printing a relative time, e.g. "-3 d"
UNIT_SYMBOL = {
    "second": "s",
    "minute": "min",
    "hour": "h",
    "day": "d",
    "month": "mo",
    "year": "y",
    "step": "steps",
}
_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}

_DATE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$")
_MONTH = re.compile(r"^([0-9]{4})-([0-9]{2})$")
#: the date-times a question may give, the grammar of the CSV reader (Python's fromisoformat also takes ISO week
#: dates, '20251209' and fractions of a second, which no data file may hold)
_DATE_TIME = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.0+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?$",
                        re.IGNORECASE)  # '.000' is a whole second, as in a file; an offset only after a time of day
# (RFC 3339 allows a lower-case 't' and 'z')
_INT = re.compile(r"^[+-]?[0-9]+$")


def _real_date(s: str) -> bool:
    try:
        dt.date.fromisoformat(s)
        return True
    except ValueError:
        return False


#: the largest integer time (a step, a year) read: beyond it float64 times and int64 arithmetic stop being exact
MAX_INT_TIME = 2 ** 53


def beyond_max_int_time(text: str) -> bool:
    """Whether the whole number written ``text`` (ASCII digits and an optional sign) lies beyond ±2^53, judged on its
    digits before ``int()`` (which stops at 4,300 digits with advice about sys.set_int_max_str_digits)."""
    digits = text.lstrip("+-").lstrip("0")
    return len(digits) > 16 or int(digits or "0") > MAX_INT_TIME


def whole_number(text: str, what: str = "time") -> int:
    """``text`` (ASCII digits with an optional sign: no other script's digits, no underscores) as an int of at most
    ±2^53 -- checked on its digits before ``int()``, whose own limit (4,300 digits) speaks of
    sys.set_int_max_str_digits; ``ValueError`` naming ``text`` otherwise."""
    if not _INT.match(text):
        raise ValueError(f"{what} {quoted(text)} is not a whole number")
    if beyond_max_int_time(text):
        raise ValueError(f"{what} {quoted(text, 30)} is beyond ±2^53, which no {what} may be")
    return int(text)


def in_utc(when: dt.datetime, text: str) -> dt.datetime:
    """``when`` as a naive UTC date-time (unchanged when it has no offset); ``ValueError`` naming ``text``
    when the shift to UTC leaves the years 1-9999 a date-time can hold (``0001-01-01T00:00+05:00``)."""
    if when.tzinfo is None:
        return when
    try:
        return when.astimezone(dt.timezone.utc).replace(tzinfo=None)
    except OverflowError:
        raise ValueError(f"time {quoted(text)} lies outside the years 1-9999 once its UTC offset is applied") from None


@dataclass(frozen=True)
class TimeAxis:
    """Maps integer time steps to labels.

    Attributes:
        granularity: one of ``second, minute, hour, day, month, year`` (calendar units) or ``step``
            (plain integer steps with no calendar meaning).
        origin: label of step 0: an ISO date-time for second..day, ``YYYY-MM`` for month, a (possibly
            negative) year for year. ``None`` when the data only gives indices (e.g. RE-Net's YAGO year
            index 0..188): labels are then the step numbers themselves.
        step: how many granularity units one step spans (e.g. 1 day).
    """

    granularity: str
    origin: str | None = None
    step: int = 1

    def __post_init__(self) -> None:
        if self.granularity not in UNIT_SYMBOL:
            raise ValueError(f"unknown time granularity {self.granularity!r}")
        if self.step < 1:
            raise ValueError("time step must be >= 1")
        if self.granularity == "step" and self.origin is not None:
            raise ValueError("granularity 'step' has no calendar origin")

    # -- labels ---------------------------------------------------------------------------------
    @property
    def unit(self) -> str:
        """Short unit of one granularity unit ("d", "y", ...)."""
        return UNIT_SYMBOL[self.granularity]

    def label(self, t: int) -> str:
        """Human label of step ``t``: an ISO date, a year, or the step number."""
        t = int(t)
        if self.origin is None:
            return str(t)
        g, n = self.granularity, t * self.step
        if g == "year":
            return str(int(self.origin) + n)
        if g == "month":
            y, m = (int(x) for x in self.origin.split("-"))
            months = y * 12 + (m - 1) + n
            return f"{months // 12:04d}-{months % 12 + 1:02d}"
        origin = dt.datetime.fromisoformat(self.origin)
        when = origin + dt.timedelta(seconds=n * _SECONDS[g])
        if g == "day":
            return when.date().isoformat()
        if g == "second":
            return when.isoformat(sep=" ")
        return when.isoformat(sep=" ", timespec="minutes")

    @property
    def last_step(self) -> int:
        """The latest step :meth:`label` can write (a calendar ends at 9999-12-31: a time one step past the
        data, or a widget's horizon, is clamped here); unbounded axes (years, plain steps): a very large step."""
        if self.origin is None or self.granularity == "year":
            return 2 ** 62
        if self.granularity == "month":
            y, m = (int(x) for x in self.origin.split("-"))
            return (9999 * 12 + 11 - (y * 12 + m - 1)) // self.step
        span = dt.datetime.max.replace(microsecond=0) - dt.datetime.fromisoformat(self.origin)
        return int(span.total_seconds()) // (_SECONDS[self.granularity] * self.step)

    def format_delta(self, delta_steps: int) -> str:
        """Relative time for display, e.g. ``-3 d``, ``+2 y``, ``0 d``."""
        n = int(delta_steps) * self.step
        sign = "+" if n > 0 else ("-" if n < 0 else "")
        return f"{sign}{abs(n)} {self.unit}"

    def describe_span(self, steps: int) -> str:
        """A length of time in words, e.g. ``364 days``, ``1 year``, ``3 time steps``."""
        n = abs(int(steps)) * self.step
        word = self.granularity if self.granularity != "step" else "time step"
        return f"{n:,} {word}{'' if n == 1 else 's'}"

    def describe_delta(self, delta_steps: int) -> str:
        """Relative time in words, e.g. ``2 days before``, ``1 year after``, ``at the same time``."""
        if int(delta_steps) == 0:
            return "at the same time"
        return f"{self.describe_span(delta_steps)} {'before' if delta_steps < 0 else 'after'}"

    def parse(self, text: str | int) -> int:
        """The step of a label (inverse of :meth:`label`); ``ValueError`` with a clear message if
        it does not fit this axis. Plain integers are accepted as step numbers on index-only axes."""
        s = str(text).strip()
        g = self.granularity
        if self.origin is None:
            if _INT.match(s):
                return whole_number(s)
            raise ValueError(f"time {quoted(s)} is not an integer step")
        if g == "year":
            if not _INT.match(s):
                raise ValueError(f"time {quoted(s)} is not a year")
            return self._exact(whole_number(s) - int(self.origin), s)
        if g == "month":
            m = _MONTH.match(s) or _DATE.match(s)
            if not m:
                raise ValueError(f"time {quoted(s)} is not a month (YYYY-MM)")
            if not 1 <= int(m.group(2)) <= 12 or (m.re is _DATE and not _real_date(s)):
                raise ValueError(f"time {quoted(s)} is not a real month")
            y0, m0 = (int(x) for x in self.origin.split("-"))
            return self._exact((int(m.group(1)) - y0) * 12 + int(m.group(2)) - m0, s)
        try:
            if not _DATE_TIME.match(s):
                raise ValueError(s)
            when = dt.datetime.fromisoformat(s.upper().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"time {quoted(s)} is not a real ISO date or date-time") from None
        when = in_utc(when, s)  # the data's clock is UTC (files with offsets are read into UTC too)
        secs = (when - dt.datetime.fromisoformat(self.origin)).total_seconds()
        unit = _SECONDS[g]
        if secs % unit:
            raise ValueError(f"time {quoted(s)} does not fall on a whole {g}")
        return self._exact(int(secs // unit), s)

    def _exact(self, units: int, s: str) -> int:
        """``units`` of the granularity as a whole number of steps, else ``ValueError``."""
        if units % self.step:
            raise ValueError(f"time {quoted(s)} falls between two steps of {self.step} {self.granularity}s")
        return units // self.step

    def describe(self) -> str:
        """One line for `tpar info`: e.g. 'day steps from 2014-01-01'."""
        size = f"{self.step} {self.granularity}s" if self.step != 1 else self.granularity
        if self.origin is None:
            return f"{size} steps (indices only, no calendar origin)" if self.granularity != "step" else "integer steps"
        if self.granularity == "year" and self.origin == "0" and self.step == 1:
            return "calendar years"
        return f"{size} steps from {self.origin}"

    def to_dict(self) -> dict:
        return {"granularity": self.granularity, "origin": self.origin, "step": self.step}

    @classmethod
    def from_dict(cls, d: dict) -> "TimeAxis":
        return cls(granularity=d["granularity"], origin=d.get("origin"), step=int(d.get("step", 1)))
