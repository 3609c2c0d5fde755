"""What a ranking's figures mean beside chance and beside their sample: the MRR and Hits@k of a uniform guess among
the candidates, and the caveats a reader needs when a model scores no better than that guess, when Hits@k is all
but free (few entities), or when the figures rest on few questions.

For ``n`` candidates and the true answer at a uniformly random rank, E[1/rank] = H_n / n (H_n the harmonic number)
and P(rank <= k) = min(k, n) / n. The time-aware filter leaves each question fewer candidates than the data's
entities, so a uniform guess scores a little *more* on the filtered figures: these are floors, said as "about".
"""

from __future__ import annotations

from tpar.errors import number_in, plural

#: below this many questions a ranking figure moves by several points from one sample to another
FEW_QUESTIONS = 100
#: a model whose MRR is within this factor of a uniform guess's is said to guess
GUESSING_FACTOR = 1.1
#: Hits@k is said to be all but free once a uniform guess reaches this share
FREE_HITS = 0.5


#: up to this many candidates H_n is summed; beyond, its asymptotic series (error below 1e-16 there) takes constant time
EXACT_HARMONIC_UP_TO = 1000
_EULER_GAMMA = 0.5772156649015329


def harmonic(n: int) -> float:
    """H_n = 1 + 1/2 + … + 1/n in constant time whatever ``n`` (a count read from a file may be any integer):
    summed up to :data:`EXACT_HARMONIC_UP_TO`, else ln n + γ + 1/(2n) − 1/(12n²) + 1/(120n⁴)."""
    import math

    if n <= EXACT_HARMONIC_UP_TO:
        return math.fsum(1.0 / r for r in range(1, n + 1))
    if n > 10 ** 15:  # the rest is below 1e-15, and a float holds no larger n
        return math.log(n) + _EULER_GAMMA
    return math.log(n) + _EULER_GAMMA + 1 / (2 * n) - 1 / (12 * n * n) + 1 / (120 * n ** 4)


def uniform_mrr(n: int) -> float:
    """E[1/rank] of a uniform guess among ``n`` candidates: H_n / n (0 for n < 1)."""
    if n < 1:
        return 0.0
    return harmonic(n) / n if n <= 10 ** 300 else 0.0  # beyond, H_n / n is below the smallest float


def uniform_hits(k: int, n: int) -> float:
    """P(rank <= k) of a uniform guess among ``n`` candidates: min(k, n) / n (0 for n < 1)."""
    return min(k, n) / n if n >= 1 else 0.0


def chance_text(entities: int) -> str:
    """E.g. "a uniform guess among the 280 entities scores MRR about 2.2% and H@10 about 3.6%"."""
    return (f"a uniform guess among the {entities:,} entities scores MRR about {100 * uniform_mrr(entities):.1f}% and "
            f"H@10 about {100 * uniform_hits(10, entities):.0f}%")


def ranking_caveats(mrr: float, entities: int, questions: int | None = None, what: str = "the model") -> list[str]:
    """What limits a ranking's figures (MRR as a fraction), each a sentence without its full stop: ``what`` scoring
    no better than a uniform guess among ``entities``; Hits@k a uniform guess already gets half of or more; fewer
    than :data:`FEW_QUESTIONS` ``questions`` (None: not known)."""
    notes = []
    if entities > 1 and mrr <= GUESSING_FACTOR * uniform_mrr(entities):
        notes.append(f"{what} scores MRR {100 * mrr:.2f}%, no better than a uniform guess among the {entities:,} "
                     f"entities (about {100 * uniform_mrr(entities):.1f}%): it is guessing")
    free = [k for k in (1, 3, 10) if entities > 1 and uniform_hits(k, entities) >= FREE_HITS]
    if free:
        sure = [k for k in free if uniform_hits(k, entities) >= 1.0]
        said = ", ".join(f"H@{k} {100 * uniform_hits(k, entities):.0f}%" for k in free)
        notes.append(f"with {plural(entities, 'entity', 'entities')}, a uniform guess already scores {said}"
                     + (f" ({' and '.join(f'H@{k}' for k in sure)} {'is' if len(sure) == 1 else 'are'} 100% whatever "
                        "the model does)" if sure else "") + ": those figures say little here")
    if questions is not None and questions < FEW_QUESTIONS:
        notes.append(f"measured on only {plural(questions, 'question')} (fewer than {FEW_QUESTIONS}): the figures would "
                     "move by several points on another sample of the same size")
    return notes


def below_chance_relations(by_relation: dict[str, tuple[float, int]], entities: int,
                           what: str = "the model") -> str:
    """A sentence without its full stop when ``what`` scores below a uniform guess among ``entities`` on some
    relations (``by_relation``: relation -> (realistic MRR as a fraction, questions)), naming the largest of them and
    their share of the questions; "" when on none. A headline carried by a few relations otherwise hides that on
    the rest the model does no better than a guess (walk-through 38 #4)."""
    if entities < 2 or not by_relation:
        return ""
    chance = uniform_mrr(entities)
    below = sorted(((q, r) for r, (mrr, q) in by_relation.items() if mrr < chance), key=lambda qr: (-qr[0], qr[1]))
    if not below:
        return ""
    q_below, q_all = sum(q for q, _ in below), sum(q for _, q in by_relation.values())
    lead = f"{what} scores below a uniform guess (MRR about {100 * chance:.1f}%) on "
    if len(below) == len(by_relation):
        return (lead + ("its only relation" if len(below) == 1 else f"every one of its {len(below):,} relations")
                + f" ({plural(q_all, 'question')}): on these questions its answers do no better than a guess")
    names = ", ".join(r for _, r in below[:5]) + (" …" if len(below) > 5 else "")
    return (lead + f"{len(below):,} of {plural(len(by_relation), 'relation')} ({names}): {q_below:,} of the "
            f"{plural(q_all, 'question')}. Its overall figure comes from the other relations; on these its answers do "
            "no better than a guess")


def test_figures(metrics: dict) -> dict[str, dict]:
    """setting -> the realistic test figures a checkpoint's ``metrics`` hold for it: each ``test_<setting>`` entry
    whose realistic MRR is a number from 0 to 1 (``count``, when recorded, the questions measured)."""
    out = {}
    for key, modes in metrics.items():
        m = modes.get("realistic") if isinstance(key, str) and key.startswith("test_") and isinstance(modes, dict) else None
        if isinstance(m, dict) and number_in(m.get("mrr"), 0, 1):
            out[key[len("test_"):]] = m
    return out


#: the largest count read from a file (a checkpoint's questions or entities) that is taken as one: a forged file may
#: hold any integer, which no sentence should print in thousands of digits nor a sum run to
MAX_RECORDED_COUNT = 10 ** 12


def _recorded_count(value: object, least: int) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and least <= value <= MAX_RECORDED_COUNT
    return value if ok else None


def measured_count(m: dict) -> int | None:
    """The questions a figures dict (:func:`test_figures`) was measured on, ``None`` when it records none (or a
    count no run could have: below 0 or above :data:`MAX_RECORDED_COUNT`)."""
    return _recorded_count(m.get("count"), 0)


def recorded_entities(extra: dict) -> int | None:
    """The data's entity count a training recorded in a checkpoint's ``extra`` (for a uniform guess's figures),
    ``None`` when it records none (or a count no data set has: below 1 or above :data:`MAX_RECORDED_COUNT`)."""
    return _recorded_count(extra.get("entities"), 1)


def figure_caveats(m: dict, entities: int, what: str = "the model") -> list[str]:
    """:func:`ranking_caveats` of one setting's test figures ``m`` (:func:`test_figures`)."""
    return ranking_caveats(float(m["mrr"]), entities, measured_count(m), what)
