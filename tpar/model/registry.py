"""Which checkpoints are available here, and which of them serves a data set.

Checkpoints: ``.tpar`` files in the given folders (default: the shipped ones, :func:`tpar.data.catalog.checkpoint_dir`). A
checkpoint serves a data set when :meth:`~tpar.model.checkpoint.Checkpoint.check_fits` accepts it
(same relations and time unit), or when its relations, matched by name, cover enough of the data's
facts (:mod:`tpar.data.relation_matching`; same time unit); one trained on exactly that data (same
fingerprint) comes first, then those with the data's own relations, then the matched ones.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tpar.data.catalog import checkpoint_dir
from tpar.data.kg import TemporalKG
from tpar.data.lineage import grew_from
from tpar.data.relation_matching import DEFAULT_MIN_COVERAGE, RelationMatch
from tpar.errors import DataError, plural
from tpar.data.timeaxis import TimeAxis
from tpar.model.checkpoint import Checkpoint

@dataclass
class CheckpointInfo:
    path: Path
    name: str
    checkpoint: Checkpoint

    @property
    def setting(self) -> str:
        return self.checkpoint.setting

    def summary(self) -> str:
        """E.g. "icews14-extrapolation-sparse (extrapolation, L=3, d=64, cap=24+..., trained on ICEWS14)"; a composite
        says what it combines. An unfinished model says so right after its name (a list cut at a narrow width
        still shows it: walk-through 39) and why at the end: "cut — UNFINISHED (…): cancelled after …"."""
        ck = self.checkpoint
        why = ck.unfinished()
        return (f"{self.name}{' — UNFINISHED' if why else ''} ({self.setting}, {ck.describe()}, trained on "
                f"{ck.data_name})" + (f": {why}" if why else ""))

    def marker(self) -> str:
        """" — UNFINISHED: <why>" for a model from a cancelled or interrupted run (its answers come from
        a model that did not finish training), else "" (to append wherever the model is listed)."""
        why = self.checkpoint.unfinished()
        return f" — UNFINISHED: {why}" if why else ""


@dataclass
class Match:
    info: CheckpointInfo
    exact: bool                  # trained on this very data (same fingerprint)
    warnings: list[str] = field(default_factory=list)
    relations: RelationMatch | None = None   # the data's relations matched to the model's (another vocabulary)

    @property
    def coverage_text(self) -> str:
        """"" for the data's own relations, else e.g. "trained on ICEWS14, applied to ICEWS18: 226 of 256 ..."."""
        return self.relations.describe() if self.relations is not None else ""


@dataclass(frozen=True)
class CheckpointProblem:
    """A ``.tpar`` file that is there but could not be loaded: ``name`` its stem (what a link or a list would call
    the model), ``text`` why (naming the file)."""
    path: Path
    name: str
    text: str

    def __str__(self) -> str:
        return self.text


#: the path as listed -> (its stamp, the checkpoint or why it was refused): a listing reads again only what changed
_LISTED: dict[Path, tuple[tuple[int, ...], "Checkpoint | str"]] = {}
_LISTED_LOCK = threading.Lock()  # listings in several threads (the app's sessions, a library caller's)


def _stamp(p: Path) -> tuple[int, ...]:
    """What changes whenever the file (through a link: its target) is rewritten, replaced or has its permissions
    changed: device, inode, size, modification and status-change times (user space cannot set the last)."""
    st = p.stat()
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _load_listed(p: Path) -> "Checkpoint | CheckpointProblem":
    """``p`` loaded and verified, or why not: from :data:`_LISTED` while its :func:`_stamp` is the one it was read
    at (a listing every few seconds must not read and verify every model again). Only verdicts on the file's bytes
    are kept (a checkpoint, a refusal); an OS error (permissions, I/O) or an unexpected failure is tried again at
    the next listing. A checkpoint is kept without its weights, which stay in the file and are read (and verified
    again) when a model is built from it (:class:`~tpar.model.checkpoint.WeightsOnDisk`): the listing's memory is
    its models' metadata, however many and large the files."""
    key = p.absolute()
    try:
        stamp: tuple[int, ...] | None = _stamp(p)
    except OSError:  # a link to nothing, a file gone meanwhile: Checkpoint.load below names it
        stamp = None
    if stamp is not None:
        with _LISTED_LOCK:
            cached = _LISTED.get(key)
        if cached is not None and cached[0] == stamp:
            got = cached[1]
            return got if isinstance(got, Checkpoint) else CheckpointProblem(p, p.stem, got)
    try:
        got = Checkpoint.load(p).keep_weights_on_disk(key)  # listed: only the metadata is held (memory bounded)
    except DataError as e:
        got = str(e)
    except OSError as e:
        return CheckpointProblem(p, p.stem, f"{p}: not readable ({e.strerror or type(e).__name__})")
    except Exception as e:  # noqa: BLE001 -- one unreadable file must not hide every other model
        return CheckpointProblem(p, p.stem, f"{p}: not loaded ({type(e).__name__}: {str(e)[:160]}); this is a bug "
                                 "in tpar, please report it")
    if stamp is not None:
        with _LISTED_LOCK:
            _LISTED[key] = (stamp, got)
    return got if isinstance(got, Checkpoint) else CheckpointProblem(p, p.stem, got)


def listed_checkpoint(path: str | Path) -> Checkpoint:
    """The checkpoint at ``path`` as it is on disk now -- read and verified only when it changed since it was last
    listed or asked for (:func:`_load_listed`); a :class:`DataError` saying why when it cannot be loaded. Shared:
    treat it as read-only. Its weights are read from the file when a model is built from it."""
    got = _load_listed(Path(path))
    if isinstance(got, CheckpointProblem):
        raise DataError(got.text)
    return got


def find_checkpoints(dirs: list[Path] | None = None) -> tuple[list[CheckpointInfo], list[CheckpointProblem]]:
    """Loadable checkpoints in ``dirs`` (default: the shipped ones, ``$TPAR_CHECKPOINT_DIR`` or the
    repository's ``checkpoints/``), and one problem per file that could not be loaded (it is
    skipped, never executed). A file is read and verified once while it is unchanged (:func:`_stamp`); a
    rewritten one is read again, and a file gone from a listed folder (or the folder itself) is let go. The
    checkpoints are shared between listings: treat them as read-only."""
    infos, problems = [], []
    asked = [Path(d).absolute() for d in (dirs if dirs is not None else [checkpoint_dir()]) if d is not None]
    seen: set[Path] = set()
    for d in asked:
        if not d.is_dir():
            continue
        for p in sorted(d.glob("*.tpar")):
            seen.add(p.absolute())
            got = _load_listed(p)
            if isinstance(got, CheckpointProblem):
                problems.append(got)
            else:
                infos.append(CheckpointInfo(p, p.stem, got))
    folders = set(asked)
    with _LISTED_LOCK:
        for gone in [k for k in _LISTED if k.parent in folders and k not in seen]:
            _LISTED.pop(gone, None)  # a deleted file's model is not held on to
    return infos, problems


def matching_checkpoints(kg: TemporalKG, infos: list[CheckpointInfo],
                         min_coverage: float = DEFAULT_MIN_COVERAGE) -> list[Match]:
    """Checkpoints that can serve ``kg``: exact fingerprint first, then those trained on the data ``kg`` grew from
    (:mod:`tpar.data.lineage`), then those with its relations (unified ones first), then those whose relations cover
    at least ``min_coverage`` of its facts (best first)."""
    out = []
    for info in infos:
        ck = info.checkpoint
        if list(ck.relations) == list(kg.relations.names):
            try:
                warnings = ck.check_fits(kg)
            except DataError:
                continue
            out.append(Match(info, ck.data_fingerprint == kg.fingerprint, warnings))
            continue
        if ck.time_unit_problem(kg):
            continue
        try:
            rm = ck.match(kg, min_coverage=min_coverage)
        except DataError:
            continue
        if rm.fact_coverage < min_coverage:
            continue
        out.append(Match(info, False, [ck.other_data_warning(kg, rm)], rm))
    # a model of the data this data set grew from (its lineage) before one of other data (scale audit 40: a grown
    # ICEWS14 opened with a model of another ICEWS14, labelled zero-shot, its own model second)
    out.sort(key=lambda m: (not m.exact, not grew_from(m.info.checkpoint.data_fingerprint, kg),
                            m.relations is not None, -(m.relations.fact_coverage if m.relations else 1),
                            m.info.setting != "unified", m.info.name))
    return out


def not_offered(kg: TemporalKG, infos: list[CheckpointInfo], matches: list[Match],
                min_coverage: float = DEFAULT_MIN_COVERAGE) -> list[tuple[str, str]]:
    """(name, why) of each checkpoint in ``infos`` that :func:`matching_checkpoints` left out for ``kg``: its time
    unit, too few of the data's facts in relations it knows, or what :meth:`Checkpoint.check_fits` refused -- so a
    user trying a model on new data learns why it is not offered (walk-through 38 #10)."""
    offered = {m.info.path for m in matches}
    out = []
    for info in infos:
        if info.path in offered:
            continue
        ck = info.checkpoint
        why = ck.time_unit_problem(kg)
        if why:
            try:
                unit = TimeAxis.from_dict(ck.time_axis).describe()
            except (KeyError, TypeError, ValueError):
                unit = "another unit"
            why = f"it counts time in {unit}, the data in {kg.time_axis.describe()}"
        elif list(ck.relations) == list(kg.relations.names):
            try:
                ck.check_fits(kg)
                why = "it was not offered"  # not reached: a fitting model is offered
            except DataError as e:
                why = e.problem
        else:
            try:
                rm = ck.match(kg, min_coverage=min_coverage)
                # floored: 94.96% is no "95.0% of the facts (95% needed)"
                share = math.floor(1000 * rm.fact_coverage) / 10
                why = (f"{len(rm.matched)} of the data's {plural(len(rm.data_relations), 'relation')} match the "
                       f"model's {len(ck.relations)}, {share:.1f}% of the facts ({100 * min_coverage:g}% needed)")
            except DataError as e:
                why = e.problem
        out.append((info.name, why))
    return out


def covering_checkpoints(kg: TemporalKG, infos: list[CheckpointInfo], relations) -> list[Match]:
    """Checkpoints that can complete rows of ``relations`` on ``kg``: :func:`matching_checkpoints` first, then
    any other whose relations include every one of ``relations`` and whose time unit is ``kg``'s (``kg`` is
    then read in its relation vocabulary, :func:`tpar.reasoning.completion.relation_view`)."""
    # those with the data's own relations; a model whose relations only match by name (another spelling) is
    # not offered here: completion reads the data by exact names (relation_view)
    out = [m for m in matching_checkpoints(kg, infos) if m.relations is None]
    have = {id(m.info) for m in out}
    need = set(relations)
    more: list[tuple[int, Match]] = []
    for info in infos:
        c = info.checkpoint
        if id(info) in have or not need <= set(c.relations) or not _same_time_unit(kg, c):
            continue
        known = len(set(kg.relations.names) & set(c.relations))
        more.append((known, Match(info, False, [f"knows {known} of the data's {kg.num_relations} relations: facts of "
                                                "the others are no evidence to it"]
                                  if known < kg.num_relations else [])))
    # the model that knows most of the data's relations first (an ICEWS14 model knowing 4 of 19 came before the
    # sample model knowing 17: walk-through 37)
    return out + [m for _, m in sorted(more, key=lambda km: (-km[0], km[1].info.name))]


def time_unit_mismatches(kg: TemporalKG, infos: list[CheckpointInfo], relations) -> list[str]:
    """Names of the models that know every one of ``relations`` but count time in another unit than ``kg`` (so
    :func:`covering_checkpoints` leaves them out), e.g. a model of days for data read in hours."""
    return [info.name for info in infos if set(relations) <= set(info.checkpoint.relations)
            and not _same_time_unit(kg, info.checkpoint)]


def _same_time_unit(kg: TemporalKG, checkpoint: Checkpoint) -> bool:
    """Whether ``checkpoint`` counts time in ``kg``'s unit (granularity and step): its Δt mean the same there."""
    return checkpoint.time_unit_problem(kg) is None
