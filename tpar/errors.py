"""Errors that carry where bad input came from, so the CLI and the app can show a clear message; and the few helpers
that put untrusted text into a message or a Markdown page (quoted, counted, escaped), and the one way a probability
is written for a user (:func:`probability_text`)."""

from __future__ import annotations

import bisect
import math
import re
from pathlib import Path


class DataError(Exception):
    """Bad input data: names the file, the row (1-based line number, if any) and the problem.

    The CLI prints ``str(error)`` and exits non-zero; the app shows it in the page. Never a traceback.
    """

    def __init__(self, problem: str, file: str | Path | None = None, row: int | None = None) -> None:
        self.problem = problem
        self.file = str(file) if file is not None else None
        self.row = row
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file
            if self.row is not None:
                where += f", row {self.row}"
            where += ": "
        elif self.row is not None:
            where = f"row {self.row}: "
        return where + self.problem


def quoted(value: object, most: int = 80) -> str:
    """``value`` quoted for a message, cut to ``most`` characters ("'AAAA…' (30,000 characters)"): a name from a
    URL or a command line is echoed, never pasted whole into a warning."""
    text = str(value)
    if len(text) <= most:
        return repr(text)
    return f"{text[:most] + '…'!r} ({len(text):,} characters)"


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~:/&$=\"'])")
#: GFM turns bare www., scheme:// and a@b text into links even when escaped (checked in chromium): an invisible
#: word joiner (U+2060) inside each such marker -- after "www", between a colon and "//", after an "@" that follows
#: text -- stops it without changing what is shown. Likewise after a colon that a word follows: Streamlit turns
#: ":smile:" into an emoji once *anything* in the same Markdown trips its emoji loader (a code span, an unescaped
#: time 12:30:00), by which time an escaped "\:smile\:" is ":smile:" again. Nowhere else: the joiner comes along
#: when text is copied. An escaped colon alone keeps ":red[x]" and ":material/home:" as text.
_AUTOLINK_MARKERS = re.compile(r"(?i)((?<![a-z0-9])www(?=\\\.)|\\:(?=\\/)|(?<=\S)@|\\:(?=\w|\\[+-]))")
WORD_JOINER = "\u2060"


def markdown_text(text: object) -> str:
    """``text`` as Markdown that shows exactly it (a name from an upload, a URL or a checkpoint never becomes a
    link, an image, LaTeX, a colour or formatting): every ASCII punctuation character backslash-escaped, and bare
    URL and e-mail markers (only those) broken by an invisible word joiner (no auto-links)."""
    escaped = _MD_SPECIAL.sub(r"\\\1", str(text))
    return _AUTOLINK_MARKERS.sub(lambda m: m.group(1) + WORD_JOINER, escaped)


#: outside code spans, what :func:`defuse_markdown` escapes (an escaped pair is kept as it is)
_DEFUSE = re.compile(r"(\\.)|([$~:\[\]<>!])")
_DEFUSED_AUTOLINK = re.compile("(?i)((?<![a-z0-9])www(?=\\\\?\\.)|\\\\:(?=\\\\?/)|(?<=\\S)@|\\\\:(?=[\\w+-]))(?!\u2060)")


_LINE = re.compile(r"[^\n]*\n?")
_ESCAPE_OR_TICKS = re.compile(r"\\.|`+")
_TICKS = re.compile(r"`+")


_FENCE_OPENER = re.compile(r"(`{3,}|~{3,})([^\n]*)")


def _fenced_blocks(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into (is a fenced code block, part), taking only the fences every CommonMark renderer reads as
    such whatever came before: an opener of three or more backticks or tildes at the very start of a line that
    follows a blank line (or starts the text), so it stands outside any list item, quote, paragraph or table (a
    fence indented into a list item ends with the item at the next unindented line, its "inside" live; a table
    goes on through a fence line in some renderers), with no ``|`` after it (a table's header row) and, after
    backticks, no backtick; closed by a line of at least as many of the same character (up to three spaces before,
    nothing after) or by the end of the text. Inside, nothing acts, and a blank line or a ``$`` stays as written.
    Other fences, and indented code blocks (only container parsing tells one from a list item's paragraph), are
    read as text: they show their escapes."""
    parts: list[tuple[bool, str]] = []
    start, fence, after_blank = 0, "", True
    for line in _LINE.finditer(text):
        lo, hi = line.span()
        if lo == hi:
            break
        if not fence:
            m = _FENCE_OPENER.match(line.group()) if after_blank else None
            if m and "|" not in m.group(2) and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                parts.append((False, text[start:lo]))
                start, fence = lo, m.group(1)
            after_blank = not line.group().strip(" \t\r\n")
        elif re.fullmatch(f" {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t\r]*\n?", line.group()):
            parts.append((True, text[start:hi]))
            start, fence = hi, ""
    parts.append((bool(fence), text[start:]))
    return [p for p in parts if p[1]]


def _code_spans(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into (is a code span, part), where CommonMark reads a code span whatever surrounds it: a
    backslash outside a span escapes the character after it (an escaped backtick opens nothing), and a run of n
    backticks opens a span that the next run of exactly n closes *on the same line*, with no ``|`` between them
    (a list item, heading, quote, blank or setext line can end a paragraph at any line, and a GFM table splits its
    cells at ``|`` before it reads spans: across either, a "span" could leave its inside live). A run nothing closes
    so is text. Linear in the text: each line's runs are indexed once by length."""
    parts: list[tuple[bool, str]] = []
    start = 0
    for line in _LINE.finditer(text):
        lo, hi = line.span()
        if lo == hi:
            break
        if "`" not in line.group():
            continue
        closers: dict[int, list[int]] = {}  # run length -> starts of the line's runs of it, ascending
        for m in _TICKS.finditer(text, lo, hi):
            closers.setdefault(m.end() - m.start(), []).append(m.start())
        bars = [m.start() for m in re.finditer(r"\|", line.group())]
        i = lo
        while True:
            m = _ESCAPE_OR_TICKS.search(text, i, hi)
            if m is None:
                break
            if m.group()[0] == "\\":
                i = m.end()
                continue
            p, run = m.start(), m.end() - m.start()
            starts = closers.get(run, [])
            k = bisect.bisect_left(starts, m.end())
            close = starts[k] if k < len(starts) else -1
            if close >= 0:
                b = bisect.bisect_left(bars, m.end() - lo)
                if b < len(bars) and bars[b] + lo < close:
                    close = -1  # a | inside: a table would cut it
            parts.append((False, text[start:p]))
            if close < 0:  # literal backticks: escaped, so nothing later pairs with them
                parts.append((False, "\\`" * run))
                i = start = m.end()
            else:
                parts.append((True, text[p:close + run]))
                i = start = close + run
    parts.append((False, text[start:]))
    return [p for p in parts if p[1]]


def defuse_markdown(text: str) -> str:
    """A Markdown document from a file someone else may have written (a model card), kept as headings, lists,
    tables, emphasis and code but with nothing that acts: outside code spans and fenced code blocks (:func:`_fenced_blocks`), ``$`` (LaTeX), ``~`` (strike),
    ``:`` (Streamlit's :colour[...] and :emoji:), brackets (links, images), ``<``/``>`` (HTML) and ``!`` are
    escaped, and bare URL and e-mail markers broken by a word joiner (:func:`markdown_text`'s)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # CommonMark ends a line at a lone CR too: a span never crosses one
    out = []
    for is_block, block in _fenced_blocks(text):
        if is_block:
            out.append(block)
            continue
        for is_code, part in _code_spans(block):
            if not is_code:
                part = _DEFUSE.sub(lambda m: m.group(1) or "\\" + m.group(2), part)
                part = _DEFUSED_AUTOLINK.sub(lambda m: m.group(1) + WORD_JOINER, part)
            out.append(part)
    return "".join(out)


def probability_text(p: float) -> str:
    """A probability as a percentage with enough digits to tell small values apart
    ("41.2%", "0.38%", "0.0021%", "< 0.0001%")."""
    pct = 100.0 * p
    if pct >= 99.95:  # 1.0 too: a softmax rounds to exactly 1 long before anything is certain (new-user walk 38)
        return "> 99.9%"
    if pct >= 10:
        return f"{pct:.1f}%"
    if pct >= 1e-4:
        return f"{pct:.{max(1, 1 - int(math.floor(math.log10(pct))))}f}%"  # two significant digits
    return "0%" if p == 0 else "< 0.0001%"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word`` agreeing, for messages: "1 row", "2,031 rows", "1 entity" (``many``: the plural when not
    ``word`` + "s")."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def finite_number(value: object) -> bool:
    """A number read from a file is usable: an int or float (not a bool) with a finite float value (a huge int
    is not: no float holds it, and ``math.isfinite`` would raise OverflowError on it)."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) if isinstance(value, float) else value.bit_length() <= 1000


def number_in(value: object, least: float = float("-inf"), most: float = float("inf"), *, whole: bool = False,
              above: bool = False) -> bool:
    """A number read from a file lies from ``least`` (excluded with ``above``) to ``most``: a
    :func:`finite_number`, and with ``whole`` an int (a float such as 3.0 is not, nor a bool). Used by the rules
    file's and the resume file's readers (positions and optimiser options); other readers still check their own
    numbers with :func:`finite_number`."""
    if not finite_number(value) or (whole and not isinstance(value, int)):
        return False
    return (least < value if above else least <= value) and value <= most


def log_internal_error(error: BaseException, log_dir: str | Path) -> tuple[Path, str]:
    """Append ``error``'s traceback to ``<log_dir>/errors.log`` under a short reference; returns (log
    path, reference). For errors that are bugs, not bad input: the user sees one line that names
    the log, never the raw traceback."""
    import datetime
    import secrets
    import traceback

    ref = secrets.token_hex(4)
    path = Path(log_dir) / "errors.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"--- {datetime.datetime.now().isoformat(timespec='seconds')} error {ref}\n{text}\n")
    return path, ref


def describe_internal_error(error: BaseException, log: Path, ref: str) -> str:
    """The one line a user sees for an unexpected error (running out of memory is said as such: no bug)."""
    first = (str(error).splitlines() or [""])[0][:200]
    if isinstance(error, MemoryError) or type(error).__name__ == "OutOfMemoryError" \
            or "can't allocate memory" in first:
        return (f"out of memory ({type(error).__name__}{': ' + first if first else ''}): what was asked needs more "
                "memory than this machine has free; fewer questions at once, a smaller model or a smaller data set "
                f"need less. Details in {log} (error {ref}).")
    return (f"internal error ({type(error).__name__}{': ' + first if first else ''}). This is a bug, not your "
            f"input; the details are in {log} (error {ref}).")


def check_count(name: str, value, least: int = 1) -> None:
    """A :class:`DataError` unless ``value`` (a library argument: a number of answers, paths, steps …) is a whole
    number at least ``least``; None passes (its default applies). A slice by -1 dropped the last answer."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise DataError(f"{name} must be a whole number of at least {least}, not {value!r}")
