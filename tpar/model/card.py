"""Model cards: a markdown page beside each shipped checkpoint, written from its own metadata."""

from __future__ import annotations

from pathlib import Path

from tpar.evaluation.calibration import stored
from tpar.evaluation.ranks import RANK_TYPES
from tpar.model.checkpoint import Checkpoint


def _fmt(m: dict) -> str:
    return " / ".join(f"{100 * m[k]:.2f}" for k in ("mrr", "hits@1", "hits@3", "hits@10"))


def trained_per_epoch(ckpt: Checkpoint) -> str:
    """The training questions an epoch actually used (from the run's history), e.g. "20,000"."""
    counts = sorted({int(h.get("queries", 0)) for h in ckpt.history if h.get("queries")})
    if not counts:
        return "unknown"
    return f"{counts[-1]:,}" if len(counts) == 1 else f"{counts[0]:,}–{counts[-1]:,}"


def propagation_note(propagation: str) -> str:
    """The card's words on the propagation a model was trained, selected and tested with."""
    if propagation == "exact":
        return "propagation exact"
    return (f"propagation {propagation} (trained, selected on valid and tested with it; "
            "`tpar evaluate --propagation exact` tests it without pruning)")


def other_data_line(ckpt: Checkpoint) -> str:
    """The card's words on using the model beyond the data it was trained on."""
    return (f"- trained on `{ckpt.data_name}` only. Other data: it answers any data set whose relations match its "
            f"{len(ckpt.relations)} by name (case, underscores, spaces and punctuation ignored; `--relation-map` "
            "for the rest; refused below 95% of the facts unless `--min-coverage` says otherwise), zero-shot: "
            f"the figures below are for `{ckpt.data_name}`; measured transfer in `benchmarks/results/transfer.md`")


def render(ckpt: Checkpoint, name: str, baselines: dict | None = None, paper: dict | None = None) -> str:
    """Markdown for ``ckpt``: data, config, training, test metrics in all tie modes, baselines, paper."""
    m, t = ckpt.config.model, ckpt.config.train
    hw = ckpt.extra.get("hardware", {})
    lines = [f"# Model card: {name}", "",
             f"- data: `{ckpt.data_name}`, fingerprint `{ckpt.data_fingerprint}`",
             f"- setting: **{ckpt.setting}** (relations: {len(ckpt.relations)}; time: {ckpt.time_axis})",
             other_data_line(ckpt),
             f"- model: L={m.num_layers}, d={m.dim}, d_a={m.attn_dim}, δ={m.activation}, dropout={m.dropout}, "
             f"chronological={m.chronological}, attention bias init {m.attention_bias_init}, "
             + propagation_note(m.propagation) + (", GRU gate between steps" if m.gate else ""),
             f"- training: lr={t.lr}" + (f" ({t.lr_schedule} schedule)" if t.lr_schedule != "constant" else "")
             + f", batch {t.batch_size} (micro {t.micro_batch}), questions per epoch "
             f"{trained_per_epoch(ckpt)} (asked for: {t.max_train_queries or 'all'}), epochs run {len(ckpt.history)}, best epoch {ckpt.extra.get('best_epoch')}, "
             f"seed {ckpt.extra.get('seed', t.seed)}",
             *warm_start_lines(ckpt.extra.get("warm_start")),
             f"- training time: {ckpt.extra.get('seconds', 0):.0f} s of optimiser steps on {hw.get('platform', '?')} "
             f"(torch {hw.get('torch', '?')}, {hw.get('cpu_threads', '?')} threads, GPU: {hw.get('gpu', 'none')})",
             f"- tpar version {ckpt.version}", "",
             "## Test metrics (both directions, time-aware filter; MRR / H@1 / H@3 / H@10, %)", ""]
    tests = {k[len("test_"):]: v for k, v in ckpt.metrics.items() if k.startswith("test_")}
    if not tests:
        lines.append("No test metrics recorded.")
    for setting, modes in tests.items():
        lines += [f"**{setting}**", "", "| tie mode | MRR / H@1 / H@3 / H@10 |", "|---|---|"]
        lines += [f"| {mode} | {_fmt(modes[mode])} |" for mode in RANK_TYPES if mode in modes]
        lines.append("")
    if baselines:
        lines += ["## Baselines on the same split (realistic)", "", "| method | MRR / H@1 / H@3 / H@10 |", "|---|---|"]
        lines += [f"| {k} | {_fmt(v)} |" for k, v in baselines.items()]
        lines.append("")
    if paper:
        lines += ["## The paper's figures", ""] + [f"- {k}: {v}" for k, v in paper.items()] + [""]
    cal = ckpt.extra.get("calibration") or {}
    if cal:
        lines += ["## Calibration (fitted on valid; `tpar calibrate`)", "",
                  "| setting | temperature | ECE before → after | Brier before → after | NLL before → after | "
                  "answer-set thresholds |", "|---|---|---|---|---|---|"]
        for setting, c in cal.items():
            try:
                b, a = c["before"], c["after"]
                thr = ", ".join(f"{100 * float(k):g}%: p ≥ {v:.2g}" for k, v in c.get("thresholds", {}).items())
                lines.append(f"| {setting} | {c['temperature']:.3f} | {b['ece']:.4f} → {a['ece']:.4f} | "
                             f"{b['brier']:.4f} → {a['brier']:.4f} | {b['nll']:.3f} → {a['nll']:.3f} | {thr} |")
            except (KeyError, TypeError, ValueError):
                lines.append(f"| {setting} | unreadable | | | | |")
        lines.append("")
        caveats = []
        for setting in cal:
            c = stored(ckpt.extra, setting)
            caveats += [f"- **{setting}**: {note}" for note in (c.caveats() if c else [])]
        if caveats:
            lines += caveats + [""]
    if ckpt.history:
        n_valid = ckpt.config.train.max_valid_queries
        which = f"a seeded subset of {n_valid:,} questions" if n_valid else "all valid questions"
        lines += [f"## Validation history ({which}, realistic MRR %)", "",
                  " ".join(f"{h['epoch']}: {100 * h.get('valid_mrr', float('nan')):.2f}" for h in ckpt.history), ""]
    return "\n".join(lines)


def write_card(ckpt_path: str | Path, **kw) -> Path:
    p = Path(ckpt_path)
    card = p.with_suffix(".md")
    card.write_text(render(Checkpoint.load(p), p.stem, **kw), encoding="utf-8")
    return card


def warm_start_lines(warm: dict | None) -> list[str]:
    """Card lines for a chain of warm starts, the most recent first."""
    out = []
    while warm:
        hw = warm.get("hardware") or {}
        where = f" on {hw.get('platform', '?')} ({hw.get('gpu') or 'CPU'})" if hw else ""
        hist = " ".join(f"{h['epoch']}: {100 * h['valid_mrr']:.2f}" for h in warm.get("history") or [] if "valid_mrr" in h)
        out.append(f"- warm start: from `{warm.get('from') or '?'}` ({warm.get('epochs')} epochs, "
                   f"{warm.get('seconds') or 0:.0f} s of optimiser steps{where}"
                   + (f"; its valid history {hist}" if hist else "") + ")")
        warm = warm.get("before")
    return out

