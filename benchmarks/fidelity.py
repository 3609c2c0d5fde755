"""Are the explanations faithful? Deletion test: remove the facts behind the top explanation paths'
links and watch the answer's score fall -- it must fall further than when as many facts are removed
at random from the question's reached neighbourhood, or by attention α alone. Insertion test, the
mirror image: starting from an empty background, give the model only the first k facts of each order
and watch the answer's score rise above its empty-background value.

For each test question whose (true) answer the model ranks first: the top 10 paths of Eq. 14
(`tpar.reasoning.explanation`); three orders of candidate facts --
  * paths: the facts of the paths' links, best path first, hop by hop (``--within-path importance``:
    each path's facts by the explanation's importance of their links, largest first; ``share``: all the
    paths' facts by their share of the score, summed over every link that walks them; ``removal``: by
    the explanation's measured removal effect of its ``--measure`` largest-share facts, then by share);
  * attention: the facts of the links the propagation admitted, highest α (any layer) first;
  * random: in a seeded random order, the facts of the admitted links that lie on some L-step walk from the
    question's entity to the answer (``tpar.reasoning.explanation.facts_towards``) -- the only facts whose
    removal can move the answer's score; drawing from every admitted link (thousands, most on no walk to the
    answer) made the random baseline remove nothing that mattered (AUC 0.000, issue #33);
and for k = 1..10 the drop f(q, a) − f'(q, a) after removing the first k facts of each order (the
background rebuilt without them; in interpolation the question's own answers stay hidden). Reported:
the mean drop per k and its mean over k (the deletion AUC, per fact); the same for the insertion rise.

    python benchmarks/fidelity.py --checkpoint checkpoints/sample-world-unified.tpar \\
        --data sample_data/world/chronological --questions 60 [--setting extrapolation]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from tpar.data.loading import load_dataset
from tpar.graph.queries import Question
from tpar.model.checkpoint import Checkpoint
from tpar.model.network import PropagationTrace
from tpar.reasoning.explanation import Explainer, facts_towards
from tpar.reasoning.prediction import Predictor

K = 10


def link_facts(links: torch.Tensor, R: int) -> list[tuple[int, int, int, int]]:
    """Trace link rows (query, src, rel, dst, time) -> the facts (s, r, o, t) they walk."""
    out = []
    for _, src, rel, dst, t in links.tolist():
        out.append((dst, rel - R, src, t) if rel >= R else (src, rel, dst, t))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--setting", default="extrapolation", choices=["extrapolation", "interpolation"])
    ap.add_argument("--questions", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--importance", default="gradient", choices=["gradient", "integrated"],
                    help="how the explanation ranks paths (tpar.reasoning.explanation)")
    ap.add_argument("--measure", type=int, default=10,
                    help="--within-path removal: how many facts (largest share first) to measure")
    ap.add_argument("--within-path", default="hops", choices=["hops", "importance", "share", "removal"],
                    help="order of the paths' facts: best path first, hop by hop from the question's entity; "
                         "importance: each path's facts by their link's importance; share: all the paths' facts by "
                         "their share of the score (every link walking the fact, tpar.reasoning.explanation.FactShare); "
                         "removal: by the measured effect of removing each (the --measure largest shares), then share")
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    kg = load_dataset(args.data)
    p = Predictor(Checkpoint.load(args.checkpoint), kg, "cpu")
    ex = Explainer(p)
    R = kg.num_relations
    facts = kg.all_facts()
    E, T = kg.num_entities, int(facts[:, 3].max()) + 1

    def key_of(f) -> int:
        s, r, o, t = (int(x) for x in f)
        return ((s * R + r) * E + o) * T + t

    fact_keys = np.array([key_of(f) for f in facts])
    rng = np.random.default_rng(args.seed)
    test = kg.facts("test")
    order = rng.permutation(len(test))
    drops = {m: [] for m in ("paths", "attention", "random")}
    rises = {m: [] for m in ("paths", "attention", "random")}
    used = 0
    pool_sizes = []  # facts on walks that reach the answer, per question (the random order's pool)
    for i in order:
        if used >= args.questions:
            break
        s, r, o, t = test[i].tolist()
        q = Question(kg.entities.name(s), kg.relations.name(r), kg.time_axis.label(t), "object", args.setting)
        e = ex.explain(q.subject, q.relation, q.time, kg.entities.name(o), setting=args.setting, num_paths=10,
                       importance=args.importance, top_facts=200,
                       measure_facts=args.measure if args.within_path == "removal" else 0)
        if e.rank != 1 or not e.paths:
            continue
        used += 1
        path_order = list(dict.fromkeys((kg.entities.id(x.subject), kg.relations.id(x.relation),
                                         kg.entities.id(x.object), x.time_step) for pth in e.paths
                                        for x in (sorted(pth.links, key=lambda x: -abs(x.gradient))
                                                  if args.within_path == "importance" else pth.links)))
        if args.within_path in ("share", "removal"):  # the same facts by their share (or measured removal)
            ids = lambda x: (kg.entities.id(x.subject), kg.relations.id(x.relation), kg.entities.id(x.object),
                             x.time_step)
            share = {ids(x): x.share for x in e.facts}
            removal = {ids(x): x.removal for x in e.facts if x.removal is not None}
            path_order.sort(key=lambda f: (-removal.get(f, -np.inf), -share.get(f, 0.0))
                            if args.within_path == "removal" else -share.get(f, 0.0))
        prepared = p.prepare(q)
        trace = PropagationTrace()
        with torch.no_grad():
            base = float(p.model(prepared.batch, prepared.background, trace=trace)[0, o])
        admitted, alphas = [], []
        for links, alpha in zip(trace.links, trace.alpha):
            admitted += link_facts(links, R)
            alphas += alpha.tolist()
        by_alpha = list(dict.fromkeys(f for _, f in sorted(zip(alphas, admitted), key=lambda z: -z[0])))
        pool = facts_towards(trace, o, R)  # facts on walks that reach the answer: removing others changes nothing
        pool_sizes.append(len(pool))
        shuffled = [pool[j] for j in rng.permutation(len(pool))]
        def score(background: np.ndarray) -> float:
            pk = p.prepare(q, background)
            with torch.no_grad():
                return float(p.model(pk.batch, pk.background)[0, o])

        empty = score(facts[:0])
        for method, seq in (("paths", path_order), ("attention", by_alpha), ("random", shuffled)):
            drop, rise = [], []
            for k in range(1, K + 1):
                gone = set(seq[:k])
                keep = ~np.isin(fact_keys, [key_of(f) for f in gone])
                drop.append(base - score(facts[keep]))
                rise.append(score(np.array(seq[:k], dtype=np.int64).reshape(-1, 4)) - empty)
            drops[method].append(drop)
            rises[method].append(rise)
    result = {"data": kg.name, "setting": args.setting, "questions": used, "importance": args.importance,
              "within_path": args.within_path, "measure": args.measure if args.within_path == "removal" else 0,
              "random_pool": {"mean": float(np.mean(pool_sizes)) if pool_sizes else 0.0,
                              "median": float(np.median(pool_sizes)) if pool_sizes else 0.0}}
    if pool_sizes:
        print(f"random order: drawn from the facts on walks that reach the answer, {np.mean(pool_sizes):,.0f} per "
              f"question on average (median {np.median(pool_sizes):,.0f})")
    for test, values, verb in (("deletion", drops, "drop of f(q, a) after removing"),
                               ("insertion", rises, "rise of f(q, a) over the empty background after inserting")):
        mean = {m: np.mean(np.array(v), axis=0).tolist() for m, v in values.items() if v}
        print(f"\n{test}: {kg.name}, {args.setting}, paths ranked by {args.importance} importance, {used} test questions answered first by the model; mean {verb} "
              f"k facts (k = 1..{K}):\n")
        print(f"| facts {'removed' if test == 'deletion' else 'inserted'} by | " + " | ".join(f"k={k}" for k in range(1, K + 1))
              + " | AUC (mean) |")
        print("|---|" + "---|" * (K + 1))
        for m, row in mean.items():
            print(f"| {m} | " + " | ".join(f"{v:.3f}" for v in row) + f" | {np.mean(row):.3f} |")
        wins = [k + 1 for k in range(K) if mean["paths"][k] > max(mean["attention"][k], mean["random"][k])] if used else []
        print(f"\npaths beat attention and random at k = {wins or 'none'} ({len(wins)} of {K})")
        result[test] = {"mean": mean, "paths_win_at_k": wins}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
