"""A learning curve per shipped checkpoint: validation MRR after each epoch (the valid questions the
run selected on) against the training questions seen so far, from the checkpoint's own history.

    python benchmarks/learning_curves.py        # benchmarks/results/learning_curves.md + one SVG per model
"""

from __future__ import annotations

from pathlib import Path

from tpar.model.checkpoint import Checkpoint

from svgplot import frame

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "results"


def svg(points: list[tuple[int, float]], best: int, title: str, path: Path) -> None:
    W, H, pad = 560, 300, 60
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = 0, max(xs) * 1.05
    y0, y1 = min(ys) - 1, max(ys) + 1
    out, X, Y = frame(W, H, (x0, x1), (y0, y1), xlabel="training questions seen", ylabel="valid MRR %", title=title,
                      xfmt=",.0f", pad=pad)
    out.append('<polyline fill="none" stroke="#1d4ed8" stroke-width="2" points="'
               + " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in points) + '"/>')
    for i, (x, y) in enumerate(points, start=1):
        out.append(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="{5 if i == best else 3}" '
                   f'fill="{"#ea580c" if i == best else "#1d4ed8"}"/>')
    out.append("</svg>")
    path.write_text("\n".join(out))


def chained_history(ck: Checkpoint) -> tuple[list[dict], int]:
    """The validation history of a checkpoint preceded by those of the warm starts it continued (each up to
    its kept epoch, the weights the next stage began from), and how many epochs came before its own."""
    stages = []
    for warm in ck.warm_starts():
        kept = warm.get("best_epoch") or len(warm.get("history") or [])
        stages.append((warm.get("history") or [])[:kept])
    earlier = [h for hist in reversed(stages) for h in hist]
    return earlier + list(ck.history), len(earlier)


def main() -> None:
    lines = ["# Learning curves of the shipped checkpoints", "",
             "Validation MRR % (realistic, on the valid questions each run selected on: a seeded subset, or all of valid -- the cards say which; a unified stage scores the mean of its two settings) after each epoch, "
             "against the training questions seen; the orange dot is the epoch kept (selection on valid only). "
             "`python benchmarks/learning_curves.py`.", "",
             "| checkpoint | epochs | kept | valid MRR per epoch |", "|---|---|---|---|"]
    figures = []
    for path in sorted((ROOT.parent / "checkpoints").glob("*.tpar")):
        ck = Checkpoint.load(path)
        # a composite has no training of its own: one curve per model it combines
        parts = ([(f"{path.stem}, model {i} (`{name}`)", f"{path.stem}-model{i}", m)
                  for i, (name, m) in enumerate(zip(ck.member_names, ck.members), start=1)]
                 if ck.kind == "composite" else [(path.stem, path.stem, ck)])
        for label, stem, m in parts:
            history, before = chained_history(m)
            seen, points = 0, []
            for h in history:
                seen += int(h.get("queries", 0))
                points.append((seen, 100 * h.get("valid_mrr", float("nan"))))
            if not points:
                continue
            best = before + int(m.extra.get("best_epoch", len(points) - before))
            svg(points, best, f"{label.replace('`', '')}: valid MRR by training questions",
                OUT / f"learning_curve_{stem}.svg")
            figures.append(f"![{stem}](learning_curve_{stem}.svg)")
            lines.append(f"| {label} | {len(points)}" + (f" ({before} before the last warm start)" if before else "")
                         + f" | {best} | " + ", ".join(f"{y:.2f}" for _, y in points) + " |")
    lines += [""] + figures
    (OUT / "learning_curves.md").write_text("\n".join(lines) + "\n")
    print(OUT / "learning_curves.md")


if __name__ == "__main__":
    main()
