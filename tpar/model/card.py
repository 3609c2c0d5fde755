"""Model cards: a markdown page beside each checkpoint, written from its own metadata and bound to it:
its last line names the checkpoint's sha256, so a card left beside another model saved under the same
name (retrained, calibrated again) is recognised and never shown for it (:func:`card_for`)."""

from __future__ import annotations

import math
import re
from pathlib import Path

from tpar.data.outputs import write_text
from tpar.errors import markdown_text, plural
from tpar.evaluation.baselines import ahead_text, frequency_comparison
from tpar.evaluation.calibration import stored
from tpar.evaluation.ranks import RANK_TYPES
from tpar.model.checkpoint import Checkpoint
from tpar.model.config import ModelConfig


#: the card's last line: the sha256 of the checkpoint it describes (an HTML comment: invisible in a viewer)
CARD_MARK = "<!-- tpar model card of the checkpoint with sha256 {} -->"
_MARK = re.compile(r"^<!-- tpar model card of the checkpoint with sha256 ([0-9a-f]*) -->\s*$", re.MULTILINE)




def _text(value: object, limit: int = 300) -> str:
    """A string read from a checkpoint (whose writer chose every string in it), as Markdown text that stays text:
    on one line, cut at ``limit``, never a link, an image, LaTeX, a colour, emphasis, code or a table cell
    (:func:`tpar.errors.markdown_text`)."""
    return markdown_text(" ".join(str(value).split())[:limit])


def _code(value: object, limit: int = 300) -> str:
    """A string read from a checkpoint as an inline code span that cannot end early or break a table row
    (backticks shown as ', line breaks as spaces, | escaped)."""
    one = " ".join(str(value).split())[:limit].replace("`", "'").replace("|", "\\|")
    return f"`{one}`"


def _count(value: object) -> str:
    """A stored count with thousands separators, or "?" when it is not a whole number."""
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "?"


def _fmt(m: dict) -> str:
    """MRR / H@1 / H@3 / H@10 in %, "–" for a figure not measured (missing or NaN)."""
    return " / ".join(f"{100 * v:.2f}" if isinstance(v := m.get(k), (int, float)) and math.isfinite(v) else "–"
                      for k in ("mrr", "hits@1", "hits@3", "hits@10"))


def trained_per_epoch(ckpt: Checkpoint) -> str:
    """The training questions an epoch actually used (from the run's history), e.g. "20,000"."""
    counts = sorted({int(h.get("queries", 0)) for h in ckpt.history if h.get("queries")})
    if not counts:
        return "unknown"
    return f"{counts[-1]:,}" if len(counts) == 1 else f"{counts[0]:,}–{counts[-1]:,}"


def propagation_note(model: ModelConfig) -> str:
    """The card's words on the propagation a model was trained, selected and tested with: plain words first, the
    setting's short form after them."""
    if model.propagation == "exact":
        return f"propagation: {model.propagation_words}"
    return (f"propagation: {model.propagation_words}, `{model.propagation}` for short; trained, selected on valid and "
            "tested with it (`tpar evaluate --propagation exact` tests it without pruning)")


def time_axis_text(axis: object) -> str:
    """A stored time axis in words, e.g. "days from 2025-01-01" or "years, steps of 10"."""
    if not isinstance(axis, dict) or not axis.get("granularity"):
        return "unknown"
    unit = _text(axis["granularity"])
    step, origin = axis.get("step", 1), axis.get("origin")
    text = f"{unit}s" if step == 1 else f"{unit}s, steps of {_text(step)}"
    return text + (f" from {_text(origin)}" if origin not in (None, "", "0", 0) else "")


def other_data_line(ckpt: Checkpoint) -> str:
    """The card's words on using the model beyond the data it was trained on."""
    return (f"- trained on {_code(ckpt.data_name)} only. Other data: it answers any data set whose relations match its "
            f"{len(ckpt.relations)} by name (case, underscores, spaces and punctuation ignored; `--relation-map` "
            "for the rest; refused below 95% of the facts unless `--min-coverage` says otherwise), zero-shot: "
            f"the figures below are for {_code(ckpt.data_name)}; measured transfer in `benchmarks/results/transfer.md`")


def render(ckpt: Checkpoint, name: str, baselines: dict | None = None, paper: dict | None = None,
           notes: list[str] | None = None) -> str:
    """Markdown for ``ckpt``: data, config, training, test metrics in all tie modes (and ``notes`` on how they
    were measured), baselines, paper (a composite model: :func:`render_composite`)."""
    if ckpt.kind == "composite":
        return render_composite(ckpt, name, baselines, paper, notes)
    m, t = ckpt.config.model, ckpt.config.train
    hw = ckpt.extra.get("hardware", {})
    lines = [f"# Model card: {_text(name)}", "",
             f"- data: {_code(ckpt.data_name)}, fingerprint {_code(ckpt.data_fingerprint)}",
             f"- setting: **{ckpt.setting}** (relations: {len(ckpt.relations)}; time: {time_axis_text(ckpt.time_axis)})",
             other_data_line(ckpt),
             f"- model: L={m.num_layers}, d={m.dim}, d_a={m.attn_dim}, δ={m.activation}, dropout={m.dropout}, "
             + ("paths in time order only (t_1 ≥ t_2 ≥ …, the paper's ablation), " if m.chronological
                else "paths in any time order (Section 4.1), ")
             + f"attention bias init {m.attention_bias_init}, "
             + propagation_note(m) + (", GRU gate between steps" if m.gate else ""),
             f"- training: lr={t.lr}" + (f" ({t.lr_schedule} schedule)" if t.lr_schedule != "constant" else "")
             + f", batch {t.batch_size} (micro {t.micro_batch}), questions per epoch "
             f"{trained_per_epoch(ckpt)} (asked for: {f'{t.max_train_queries:,}' if t.max_train_queries else 'all'}), epochs run {len(ckpt.history)}, best epoch {_text(ckpt.extra.get('best_epoch'))}, "
             f"seed {_text(ckpt.extra.get('seed', t.seed))}",
             *warm_start_lines(ckpt.warm_starts()),
             f"- training time: {ckpt.extra.get('seconds', 0):.0f} s of optimiser steps on {hardware_text(hw)}",
             f"- tpar version {_text(ckpt.version)}", "",
             "## Test metrics (both directions, time-aware filter; MRR / H@1 / H@3 / H@10, %)", ""]
    if ckpt.unfinished():  # said first: every figure below comes from a model that did not finish training
        lines[2:2] = [f"**Unfinished run:** {_text(ckpt.unfinished(), 1000)}; its answers come from a model that did not finish "
                      "training.", ""]
    lines += _results(ckpt, baselines, paper, notes)
    if ckpt.history:
        which = validation_text(ckpt)
        lines += [f"## Validation history ({which}, realistic MRR %)", "",
                  " ".join(f"{h['epoch']}: {100 * h.get('valid_mrr', float('nan')):.2f}" for h in ckpt.history), ""]
    return "\n".join(lines + _closing(ckpt))


def validation_text(ckpt: Checkpoint) -> str:
    """Which valid questions the history was measured on: the counts the run recorded ("116 questions per
    setting, all of them"), or, for a run that recorded none, the cap it was given."""
    cap = ckpt.config.train.max_valid_queries
    used = sorted({int(v) for h in ckpt.history for k, v in h.items()
                   if k.startswith("valid_") and k.endswith("_queries") and isinstance(v, (int, float))})
    if used:
        n = f"{used[-1]:,}" if len(used) == 1 else f"{used[0]:,}–{used[-1]:,}"
        return f"{n} questions a setting, " + ("a seeded subset" if cap and used[-1] >= cap else "all of them")
    return f"a seeded subset of at most {cap:,} questions" if cap else "all valid questions"


def hardware_text(hw: object) -> str:
    """Where a run ran, from its stored hardware record, e.g. "Linux-… (torch 2.13.0+cpu, 1 thread, GPU: none)"."""
    hw = hw if isinstance(hw, dict) else {}
    threads = hw.get("cpu_threads", "?")
    return (f"{_text(hw.get('platform', '?'))} (torch {_text(hw.get('torch', '?'))}, {_text(threads)} "
            f"thread{'' if threads == 1 else 's'}, GPU: {_text(hw.get('gpu', 'none'))})")


def _verdicts(ckpt: Checkpoint, m: dict, base: float | None) -> list[str]:
    """What a setting's realistic test figures ``m`` mean, where the run recorded it: the questions measured, the
    frequency baseline's MRR on them (``base``, from ``extra["baseline_test"]``) and what limits the figures
    (:func:`tpar.evaluation.chance.ranking_caveats` with the data's ``extra["entities"]``)."""
    from tpar.evaluation.chance import FEW_QUESTIONS, figure_caveats, measured_count, recorded_entities

    out = []
    count = measured_count(m)
    entities = recorded_entities(ckpt.extra)
    if count is not None and (entities is None or count >= FEW_QUESTIONS):  # the caveats below say a small count
        out.append(f"measured on {count:,} test questions")
    mrr = m.get("mrr")
    if base is not None and isinstance(mrr, (int, float)):
        out.append(f"the frequency baseline scores MRR {100 * base:.2f}% on them: the model "
                   + (ahead_text(mrr, base) if mrr > base else
                      f"does not beat it ({100 * (mrr - base):+.2f} points)"))
    if isinstance(mrr, (int, float)) and entities is not None:
        out += figure_caveats(m, entities)
    return [_text(v) for v in out]


def _results(ckpt: Checkpoint, baselines: dict | None, paper: dict | None, notes: list[str] | None = None) -> list[str]:
    """The card's test metrics (then ``notes``, each a line of Markdown), baselines, the paper's figures and the
    calibration."""
    lines: list[str] = []
    tests = {k[len("test_"):]: v for k, v in ckpt.metrics.items() if k.startswith("test_")}
    if not tests:
        cut = ckpt.extra.get("cut")
        lines += ["No test metrics recorded" + (f": its run was cancelled while {_text(cut)}." if cut in (
            "calibrating on valid", "evaluating on test") else "."), ""]
    bases = {s: base for s, _, base in frequency_comparison(ckpt.metrics, ckpt.extra.get("baseline_test"))}
    for setting, modes in tests.items():
        lines += [f"**{setting}**", "", "| tie mode | MRR / H@1 / H@3 / H@10 |", "|---|---|"]
        lines += [f"| {mode} | {_fmt(modes[mode])} |" for mode in RANK_TYPES if mode in modes]
        lines.append("")
        verdicts = _verdicts(ckpt, modes.get("realistic") or {}, bases.get(setting))
        if verdicts:
            lines += [f"- {v}" for v in verdicts] + [""]
    if tests and notes:
        lines += [f"- {n}" for n in notes] + [""]
    if baselines:
        lines += ["## Baselines on the same split (realistic)", "", "| method | MRR / H@1 / H@3 / H@10 |", "|---|---|"]
        lines += [f"| {k} | {_fmt(v)} |" for k, v in baselines.items()]
        lines.append("")
    if paper:
        lines += ["## The paper's figures", ""] + [f"- {k}: {v}" for k, v in paper.items()] + [""]
    cal = ckpt.extra.get("calibration") or {}
    if cal:
        lines += ["## Calibration (fitted on valid; `tpar calibrate`)", "",
                  "| setting | calibrator | ECE before → after | Brier before → after | NLL before → after |",
                  "|---|---|---|---|---|"]
        sets = []  # the answer-set thresholds below the table: a sixth column was cut off at 820 px (walk-through 38)
        for setting, c in cal.items():
            try:
                b, a = c["before"], c["after"]
                thr = ", ".join(f"{100 * float(k):g}%: p ≥ {v:.2g}" for k, v in c.get("thresholds", {}).items())
                knots = len(c.get("top_map") or [])
                how = f"T = {c['temperature']:.3f}" + (f" + top-answer map ({knots} knots)" if knots else "")
                lines.append(f"| {_text(setting)} | {how} | {b['ece']:.4f} → {a['ece']:.4f} | "
                             f"{b['brier']:.4f} → {a['brier']:.4f} | {b['nll']:.3f} → {a['nll']:.3f} |")
                if thr:
                    sets.append(f"- answer-set thresholds, {_text(setting)}: {thr}")
            except (KeyError, TypeError, ValueError):
                lines.append(f"| {_text(setting)} | unreadable | | | |")
        lines += [""] + (sets + [""] if sets else [])
        caveats = []
        for setting in cal:
            c = stored(ckpt.extra, setting)
            caveats += [f"- **{_text(setting)}**: {_text(note, 1000)}" for note in (c.caveats() if c else [])]
        if caveats:
            lines += caveats + [""]
    return lines


def _closing(ckpt: Checkpoint) -> list[str]:
    """What loading set aside, and the mark that binds the card to the checkpoint's sha256."""
    lines: list[str] = []
    if ckpt.load_notes:
        lines += ["## Set aside when loading", ""] + [f"- {_text(n, 1000)}" for n in ckpt.load_notes] + [""]
    if ckpt.digest:
        lines.append(CARD_MARK.format(ckpt.digest))
    return lines


def render_composite(ckpt, name: str, baselines: dict | None = None, paper: dict | None = None,
                     notes: list[str] | None = None) -> str:
    """Markdown for a composite model (:mod:`tpar.model.composite`): what it combines and how it was chosen on
    valid, each model with its temperature and weight, the history prior's fitted parameters, every candidate's
    valid figure, then test metrics, baselines, the paper's figures and the calibration as for one model."""
    model = ckpt.build_model("cpu")
    sel = ckpt.selection or {}
    cands = sel.get("candidates", {})
    hw = ckpt.extra.get("hardware", {})
    lines = [f"# Model card: {_text(name)}", "",
             f"- kind: **composite** -- the ranking combines {ckpt.combination_text()}, chosen on valid: "
             f"`{model.formula()}`",
             f"- data: {_code(ckpt.data_name)}, fingerprint {_code(ckpt.data_fingerprint)}",
             f"- setting: **{ckpt.setting}** (relations: {len(ckpt.relations)}; time: {time_axis_text(ckpt.time_axis)})",
             other_data_line(ckpt),
             propagation_of_members(ckpt),
             f"- built by {_code(ckpt.extra.get('command') or 'tpar ensemble', 2000)} (seed "
             f"{_text(ckpt.extra.get('seed', '?'))}) in {ckpt.extra.get('seconds', 0):.0f} s on {hardware_text(hw)}; "
             "no training of its own: its models were trained apart (below)",
             f"- tpar version {_text(ckpt.version)}", ""]
    if ckpt.unfinished():
        lines[2:2] = [f"**Unfinished run:** {_text(ckpt.unfinished(), 1000)}; its answers come from a model that did not finish "
                      "training.", ""]
    weighted = ckpt.member_weights is not None
    lines += ["## How it scores", "",
              ("S(q, e) = Σᵢ wᵢ·fᵢ(q, e) / Tᵢ + β·log(1 + ψ(e | q)/ε): the weighted mean (weights wᵢ chosen on valid, "
               "Σ wᵢ = 1) of the models' calibrated " if weighted else
               "S(q, e) = Σᵢ fᵢ(q, e) / (n·Tᵢ) + β·log(1 + ψ(e | q)/ε): the mean of the models' calibrated ")
              + "log-probabilities log softmax(fᵢ/Tᵢ) plus β·log(ε + ψ), up to a constant per question (the softmax "
              "normalisers and β·log ε), so it ranks and ties exactly as that mean does (`tpar/model/composite.py`). "
              "fᵢ is model i's score (Eq. 9), Tᵢ its calibration temperature; ψ the recurrency baseline's score (how "
              "often and how recently the candidate already answered the question, plus its share of the relation), "
              "computed on the very background the models see. An entity with no path of any model and ψ = 0 "
              "scores 0.", "",
              "## Models", "",
              "| model | file | L, d, propagation | T (source) | "
              + ("weight w; factor w/T" if weighted else "weight 1/(n·T)")
              + " | valid MRR alone | test MRR alone | training | sha256 |", "|---|---|---|---|---|---|---|---|---|"]
    sources = sel.get("temperature_sources", [])
    # the selection's candidates number the models given: member i is given model kept[i] (all kept unless the
    # weight search left some out; by position, not by file name -- two runs' files may share one)
    kept = kept_positions(sel, ckpt.member_names, len(ckpt.members))
    renumbered = kept != list(range(len(kept)))  # a model given before a kept one was left out
    for i, (m, t, c) in enumerate(zip(ckpt.members, ckpt.temperatures, model.coefficients)):
        j = kept[i]
        alone = cands.get(f"model {j + 1}", {}).get("mrr")
        test = m.metrics.get(f"test_{ckpt.setting}", {}).get("realistic", {}).get("mrr")
        mt = m.config.train
        label = f"{i + 1} (given {j + 1})" if renumbered else f"{i + 1}"
        lines.append(f"| {label} | {_code(ckpt.member_names[i] if i < len(ckpt.member_names) else '?')} | "
                     f"{m.describe()}{'; the sparse default' if m.config.model.is_sparse_default else ''} | "
                     f"{t:.3f}; {_text(sources[j]) if j < len(sources) else '?'} | "
                     + (f"{ckpt.member_weights[i]:.4f}; {c:.4f}" if weighted else f"{c:.4f}") + " | "
                     f"{'–' if alone is None else f'{100 * alone:.2f}'} | {'–' if test is None else f'{100 * test:.2f}'} | "
                     f"{plural(len(m.history), 'epoch')}, lr {mt.lr} ({mt.lr_schedule}), batch {mt.batch_size}, seed "
                     f"{_text(m.extra.get('seed', mt.seed))}, {m.extra.get('seconds', 0):.0f} s on "
                     f"{_where(m.extra.get('hardware'))}{member_warm_start(m)} | "
                     f"`{m.digest[:12]}` |")
    if sel.get("left_out"):
        lines.append(f"\nGiven but left out (weight 0 on valid): {', '.join(_code(n) for n in sel['left_out'])}.")
    lines.append("")
    prior = ckpt.prior
    if prior is not None:
        rec = prior["recurrency"]
        fit = rec.get("fit", {})
        lines += ["## History prior", "",
                  f"- ψ = α·ψ_λ + (1 − α)·ξ, the recurrency baseline (Gastinger et al. 2024) fitted on "
                  f"{_count(fit.get('queries'))} {_text(fit.get('split', 'valid'))} questions (seeded): λ = {rec['lambda']:g} "
                  f"per time step, α = {rec['alpha']:g}, and their own (λ, α) for {len(rec.get('per_relation', {}))} "
                  "relations",
                  f"- ε = {prior['eps']:g}, β = {prior['beta']:g}, chosen on valid from ε ∈ "
                  f"{{{', '.join(f'{x:g}' for x in sel.get('eps_grid', []))}}} × β ∈ "
                  f"{{{', '.join(f'{x:g}' for x in sel.get('beta_grid', []))}}}", ""]
    elif sel.get("prior_asked"):
        lines += ["## History prior", "", "Asked for, but no (ε, β) helped on valid: the composite has none.", ""]
    if cands:
        ranked = sorted(cands.items(), key=lambda kv: -kv[1]["mrr"])
        q = next(iter(cands.values())).get("queries", 0)
        sub = f"a seeded subset of {_count(sel['subset'])}" if sel.get("subset") else "all"
        lines += ["## Selection on valid", "",
                  f"{len(cands)} candidates scored on {sub} valid questions ({_count(q)}; {_text(sel.get('metric', ''))}, "
                  f"seed {_text(sel.get('seed', '?'))}); chosen: **{_text(sel.get('chosen'))}**, the best of those that use every model"
                  + (" or whose weights were searched (whole numbers, greedy steps from equal weights)"
                     if sel.get("weights_searched") else "") + ". "
                  "Test was never looked at."
                  + (f" A candidate's \"model j\" is the j-th model given to `tpar ensemble`; models "
                     f"{', '.join(str(i + 1) for i in range(len(kept)))} above are given models "
                     f"{', '.join(str(j + 1) for j in kept)}." if renumbered else "")
                  + " The ten best (the file keeps all):", "",
                  "| candidate | valid MRR | H@1 | H@10 |", "|---|---|---|---|"]
        lines += [f"| {_text(k)}{' (chosen)' if k == sel.get('chosen') else ''} | {100 * v['mrr']:.2f} | "
                  f"{100 * v.get('hits@1', float('nan')):.2f} | {100 * v.get('hits@10', float('nan')):.2f} |"
                  for k, v in ranked[:10]]
        lines.append("")
    lines += ["## Test metrics (both directions, time-aware filter; MRR / H@1 / H@3 / H@10, %)", ""]
    lines += _results(ckpt, baselines, paper, notes)
    return "\n".join(lines + _closing(ckpt))


def kept_positions(sel: dict, member_names: list[str], n: int) -> list[int]:
    """Each member's position among the models given to ``tpar ensemble`` (the selection's "model j" is given
    model j): the record's ``kept``; for a composite written before ``kept`` was recorded, found by file name
    in ``given`` when every member's name occurs there exactly once; else 0..n-1 (every model kept)."""
    kept = sel.get("kept")
    if isinstance(kept, list) and len(kept) == n and all(isinstance(j, int) and not isinstance(j, bool) and j >= 0
                                                         for j in kept):
        return kept
    given = sel.get("given")
    if (isinstance(given, list) and len(member_names) == n
            and all(given.count(name) == 1 for name in member_names)):
        found = [given.index(name) for name in member_names]
        if found == sorted(found):  # members keep the order they were given in
            return found
    return list(range(n))


#: the largest card file read beside a checkpoint: a card is a page of text (the shipped ones take under 10 kB), and
#: a page shows it whole on every visit (a 60 MB card took 13 s and 1.4 GB each time)
MAX_CARD_BYTES = 2 ** 20


def card_for(ckpt: Checkpoint, ckpt_path: str | Path) -> tuple[str, str]:
    """(markdown, note) of the model card of ``ckpt`` (loaded from ``ckpt_path``): the card file beside
    it when its mark names this checkpoint's sha256 (the mark line left out), else a card rendered now
    from the checkpoint itself, with a note saying why the file was not used ("" when it was)."""
    p = Path(ckpt_path)
    card = p.with_suffix(".md")
    from tpar.data.textfile import read_text
    from tpar.errors import DataError

    text, unread = None, ""
    try:  # a regular file of bounded size (a pipe or a huge file beside a checkpoint is no card)
        text = read_text(card, MAX_CARD_BYTES, "model card") if card.exists() else None
    except DataError as e:
        unread = str(e)
    found = _MARK.findall(text or "")
    if text is not None and ckpt.digest and found == [ckpt.digest]:
        return _MARK.sub("", text).rstrip() + "\n", ""
    if unread:
        why = f"{card.name} was not read ({unread}): this card is written from the checkpoint itself"
    elif text is None:
        why = f"no card file beside {p.name}: this card is written from the checkpoint itself"
    elif not found:
        why = (f"{card.name} carries no checksum binding it to these weights (written by an older tpar, or by "
               "hand): this card is written from the checkpoint itself")
    else:
        why = (f"{card.name} was written for another model saved as {p.name} (retrained or calibrated since): "
               "this card is written from the checkpoint itself")
    return _MARK.sub("", render(ckpt, p.stem)).rstrip() + "\n", why


def write_card(ckpt_path: str | Path, **kw) -> Path:
    p = Path(ckpt_path)
    card = p.with_suffix(".md")
    write_text(card, render(Checkpoint.load(p), p.stem, **kw), "model card")  # atomic: never half a card
    return card


def _run_propagations(m) -> list[tuple[str, bool]]:
    """(propagation, is it today's sparse default) of every run that trained member ``m``: its own and each
    warm start's (a model warm-started from an exact one was not trained with the sparse default alone)."""
    from tpar.model.config import ModelConfig

    out = [(m.config.model.propagation, m.config.model.is_sparse_default)]
    for w in m.warm_starts():
        cfg = (w.get("config") or {}) if isinstance(w, dict) else {}
        cfg = cfg.get("model", cfg) if isinstance(cfg, dict) else {}  # a run's config: {"model": …, "train": …}
        try:
            mc = ModelConfig(**{k: v for k, v in cfg.items() if k in ModelConfig.__dataclass_fields__})
        except (TypeError, ValueError):
            out.append(("?", False))
            continue
        out.append((mc.propagation, mc.is_sparse_default) if cfg else ("?", False))
    return out


def propagation_of_members(ckpt) -> str:
    """The composite card's line on the propagation its models were trained (warm starts included), selected
    and tested with."""
    per_member = [_run_propagations(m) for m in ckpt.members]  # each: its own run first, then its warm starts
    if per_member and all(default for runs in per_member for _, default in runs):
        return (f"- propagation: every model trained (warm starts included), selected on valid and tested with "
                f"**the sparse default** ({_text(per_member[0][0][0])})")
    described = []
    for (own, default), *warm in per_member:
        earlier = sorted({p for p, _ in warm} - {"?", own})
        notes = (["the sparse default"] if default else []) + (
            [f"its warm starts also {'; '.join(earlier)}"] if earlier else []) + (
            ["a warm start's propagation not recorded"] if any(p == "?" for p, _ in warm) else [])
        described.append(own + (f" ({'; '.join(notes)})" if notes else ""))
    if len(set(described)) == 1:
        return f"- propagation: every model trained, selected on valid and tested with {_text(described[0], 1000)}"
    return ("- propagation: each model trained, selected on valid and tested with its own -- "
            + "; ".join(f"model {i + 1}: {_text(d, 1000)}" for i, d in enumerate(described)))


def _where(hw: object) -> str:
    """Where a run ran, in a few words: its GPU, "a CPU", or "?" when nothing was recorded."""
    if not isinstance(hw, dict) or not hw:
        return "?"
    return _text(hw.get("gpu") or "a CPU")


def member_warm_start(m) -> str:
    """A composite member's warm starts, most recent first, for its row of the card (empty without one)."""
    out = [f"{_text(w.get('from') or '?')} ({_text(w.get('epochs'))} epochs, {w.get('seconds') or 0:.0f} s on "
           f"{_where(w.get('hardware'))})" for w in m.warm_starts()]
    return f", warm-started from {' after '.join(out)}" if out else ""


def warm_start_lines(warms: list[dict]) -> list[str]:
    """Card lines for a model's warm starts (:meth:`Checkpoint.warm_starts`), the most recent first."""
    out = []
    for warm in warms:
        hw = warm.get("hardware") or {}
        where = f" on {_text(hw.get('platform', '?'))} ({_text(hw.get('gpu') or 'CPU')})" if hw else ""
        hist = " ".join(f"{h['epoch']}: {100 * h['valid_mrr']:.2f}" for h in warm.get("history") or [] if "valid_mrr" in h)
        out.append(f"- warm start: from {_code(warm.get('from') or '?')} ({_text(warm.get('epochs'))} epochs, "
                   f"{warm.get('seconds') or 0:.0f} s of optimiser steps{where}"
                   + (f"; its valid history {hist}" if hist else "") + ")")
    return out

