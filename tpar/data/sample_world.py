"""A deterministic generator of the embedded sample world: a fictional year of diplomacy with
planted temporal regularities, so that answers and explanations can be checked against the truth.

    tpar sample-world --out sample_data/world --seed 7

writes (all UTF-8 CSV in the upload format ``subject,relation,object,time`` with ISO dates):

* ``facts.csv``: every fact;
* ``provenance.csv``: the same facts with a fifth column ``rule``: the planted rule that produced it,
  ``seed`` for the spontaneous events that rules react to, or ``noise`` (facts that follow no rule);
* ``rules.json``: each rule's body, head, delay and the rate at which its body fires the head;
* ``chronological/{train,valid,test}.csv``: split by time (the last weeks are valid and test),
  for extrapolation; ``random/{train,valid,test}.csv``: a seeded 80/10/10 split, for interpolation;
* ``examples.json``: one showcase question per rule, from the test weeks (the app offers them):
  subject, relation, time, the rule's answer, the rule, and the setting in which its body is
  visible (interpolation for same-day reciprocity, else extrapolation).

Every name is invented (syllable-built countries, leaders and organisations): no real-world claim.
Same seed, same bytes. (`examples.json`: showcase questions.)
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from tpar.data.outputs import csv_text

START = dt.date(2025, 1, 1)
DAYS = 365

RELATIONS = [
    "Make a visit", "Host a visit", "Threaten", "Mobilize against", "Form alliance with",
    "Sign agreement with", "Consult", "Meet", "Hold summit with", "Provide aid to", "Accuse",
    "Criticize", "Praise", "Express intent to cooperate", "Impose sanctions on", "Protest against",
    "Request assistance from", "Negotiate with", "Reject proposal of", "Investigate",
]


@dataclass(frozen=True)
class Rule:
    """A planted regularity: when ``body`` holds, ``head`` follows with probability ``rate``."""

    id: str
    kind: str
    body: list[str]
    head: str
    delay_days: list[int]  # [min, max] days after the (last) body link
    rate: float
    description: str


RULES = [
    Rule("reciprocity", "reciprocity", ["(A, Make a visit, B, t)"], "(B, Host a visit, A, t)", [0, 0], 0.9,
         "a visit is hosted by the visited country on the same day"),
    Rule("escalation", "escalation", ["(A, Threaten, B, t)"], "(B, Mobilize against, A, t + d)", [1, 3], 0.7,
         "a threatened country mobilises against the threatener within 1-3 days"),
    Rule("composition", "two-hop composition",
         ["(A, Form alliance with, C, t1)", "(C, Sign agreement with, B, t), t - 60 <= t1 < t"],
         "(A, Consult, B, t + d)", [1, 2], 0.6,
         "an ally of a country that signs an agreement consults the new partner 1-2 days later"),
    Rule("weekly_meetings", "periodic (7 days)", ["(A, Meet, B, t - 7)"], "(A, Meet, B, t)", [7, 7], 0.9,
         "some pairs meet every 7 days"),
    Rule("monthly_summits", "periodic (30 days)", ["(A, Hold summit with, B, t - 30)"], "(A, Hold summit with, B, t)",
         [30, 30], 0.9, "some pairs hold a summit every 30 days"),
    Rule("aid_repetition", "repetition", ["(A, Provide aid to, B, t)"], "(A, Provide aid to, B, t + d)", [5, 20], 0.6,
         "aid, once given, is given again 5-20 days later"),
    Rule("accusation_recency", "recency", ["(A, Accuse, B, t)"], "(A, Criticize, B, t + d)", [1, 2], 0.6,
         "an accusation is followed by criticism of the same country 1-2 days later"),
]

_SYL = ["ar", "bel", "cor", "dan", "el", "fa", "gor", "hal", "is", "jor", "kel", "lum", "mor", "nor", "or", "pel",
        "quen", "ros", "sal", "tor", "ul", "vel", "wen", "yar", "zan"]
_END_COUNTRY = ["ia", "land", "ora", "istan", "ovia", "eth", "ara", "enn"]
_FIRST = ["Ada", "Boris", "Cora", "Dario", "Elin", "Faro", "Gita", "Hugo", "Ines", "Jonas", "Kira", "Lev", "Mara",
          "Nils", "Oona", "Pavel", "Rhea", "Sami", "Tove", "Ugo", "Vera", "Wim", "Yara", "Zeno"]
_ORG = ["Council", "Union", "Front", "League", "Assembly", "Bank", "Agency", "Forum"]


#: the most countries a world has: names come from 650 syllable stems and 8 endings (5,200 in all), drawn at
#: random, so asking for nearly all of them would draw for ever
MAX_COUNTRIES = 2000


def _names(rng: np.random.Generator, n_countries: int) -> tuple[list[str], list[str], list[str]]:
    if not 1 <= n_countries <= MAX_COUNTRIES:
        from tpar.errors import DataError

        raise DataError(f"a sample world has 1 to {MAX_COUNTRIES:,} countries, not {n_countries:,}")
    countries: list[str] = []
    while len(countries) < n_countries:
        name = "".join(rng.choice(_SYL, size=int(rng.integers(1, 3)))) + str(rng.choice(_END_COUNTRY))
        name = name.capitalize()
        if name not in countries:
            countries.append(name)
    leaders = [f"{_FIRST[i % len(_FIRST)]} of {c}" for i, c in enumerate(countries)]
    orgs = [f"{countries[i * 3 % n_countries]} {_ORG[i % len(_ORG)]}" for i in range(n_countries // 2)]
    return countries, leaders, orgs


class _World:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.facts: dict[tuple[str, str, str, int], str] = {}  # fact -> producing rule (first wins)

    def add(self, s: str, r: str, o: str, t: int, rule: str) -> bool:
        if s == o or not 0 <= t < DAYS:
            return False
        key = (s, r, o, t)
        if key in self.facts:
            return False
        self.facts[key] = rule
        return True


def generate(seed: int = 7, n_countries: int = 120) -> tuple[list[tuple[str, str, str, str, str]], list[Rule]]:
    """All facts as (subject, relation, object, ISO date, rule) sorted by date, and the rules."""
    w = _World(seed)
    rng = w.rng
    countries, leaders, orgs = _names(rng, n_countries)
    actors = countries + leaders + orgs
    n = len(countries)

    def pick(k: int = 1) -> list[str]:
        return list(rng.choice(actors, size=k, replace=False))

    def delay(rule: Rule) -> int:
        a, b = rule.delay_days
        return int(rng.integers(a, b + 1))

    by = {r.id: r for r in RULES}
    # spontaneous events (seeds) per day, which rules then react to
    seeds_per_day = {"Make a visit": 8, "Threaten": 4, "Form alliance with": 3, "Sign agreement with": 6,
                     "Provide aid to": 3, "Accuse": 5}
    alliances: list[tuple[str, str, int]] = []
    for t in range(DAYS):
        for rel, k in seeds_per_day.items():
            for _ in range(int(rng.poisson(k))):
                a, b = pick(2)
                if w.add(a, rel, b, t, "seed") and rel == "Form alliance with":
                    alliances.append((a, b, t))
    seeds = [(f, r) for f, r in w.facts.items() if r == "seed"]
    for (a, rel, b, t), _ in seeds:
        if rel == "Make a visit" and rng.random() < by["reciprocity"].rate:
            w.add(b, "Host a visit", a, t, "reciprocity")
        elif rel == "Threaten" and rng.random() < by["escalation"].rate:
            w.add(b, "Mobilize against", a, t + delay(by["escalation"]), "escalation")
        elif rel == "Accuse" and rng.random() < by["accusation_recency"].rate:
            w.add(a, "Criticize", b, t + delay(by["accusation_recency"]), "accusation_recency")
        elif rel == "Provide aid to":
            tt = t
            while rng.random() < by["aid_repetition"].rate:
                tt += delay(by["aid_repetition"])
                if not w.add(a, "Provide aid to", b, tt, "aid_repetition"):
                    break
        elif rel == "Sign agreement with":
            # allies (alliance formed within 60 days before) of the signer consult the partner
            for (x, c, t1) in alliances:
                if c == a and t - 60 <= t1 < t and x != b and rng.random() < by["composition"].rate:
                    w.add(x, "Consult", b, t + delay(by["composition"]), "composition")
    # periodic meetings and summits between fixed pairs of countries
    for rule_id, rel, period, pairs in (("weekly_meetings", "Meet", 7, 40), ("monthly_summits", "Hold summit with", 30, 30)):
        rule = by[rule_id]
        for _ in range(pairs):
            i, j = rng.choice(n, size=2, replace=False)
            a, b = countries[i], countries[j]
            t = int(rng.integers(0, period))
            w.add(a, rel, b, t, "seed")
            while t + period < DAYS:
                t += period
                if rng.random() < rule.rate:
                    w.add(a, rel, b, t, rule_id)
    # noise: about 15% of all facts, uniformly random over every relation
    n_noise = int(0.15 / 0.85 * len(w.facts))
    added = 0
    while added < n_noise:
        a, b = pick(2)
        if w.add(a, str(rng.choice(RELATIONS)), b, int(rng.integers(0, DAYS)), "noise"):
            added += 1
    rows = [(s, r, o, (START + dt.timedelta(days=t)).isoformat(), rule) for (s, r, o, t), rule in w.facts.items()]
    rows.sort(key=lambda x: (x[3], x[0], x[1], x[2]))
    return rows, RULES


def _csv(rows, with_rule: bool) -> str:
    """The world's facts through the one formula-safe CSV writer (its generated names hold no line breaks)."""
    return csv_text([r if with_rule else r[:4] for r in rows],
                    ["subject", "relation", "object", "time"] + (["rule"] if with_rule else []), lineterminator="\n")


def write_world(out: str | Path, seed: int = 7, n_countries: int = 120, valid_days: int = 14, test_days: int = 14) -> dict:
    """Generate and write the world (see the module docstring); returns a summary."""
    out = Path(out)
    rows, rules = generate(seed, n_countries)
    files: dict[str, str] = {"facts.csv": _csv(rows, False), "provenance.csv": _csv(rows, True)}
    last = START + dt.timedelta(days=DAYS - 1)
    test_from = (last - dt.timedelta(days=test_days - 1)).isoformat()
    valid_from = (last - dt.timedelta(days=test_days + valid_days - 1)).isoformat()
    chrono = {"train": [r for r in rows if r[3] < valid_from],
              "valid": [r for r in rows if valid_from <= r[3] < test_from],
              "test": [r for r in rows if r[3] >= test_from]}
    order = np.random.default_rng(seed + 1).permutation(len(rows))
    a, b = int(0.8 * len(rows)), int(0.9 * len(rows))
    rand = {"train": sorted(rows[i] for i in order[:a]), "valid": sorted(rows[i] for i in order[a:b]),
            "test": sorted(rows[i] for i in order[b:])}
    for name, parts in (("chronological", chrono), ("random", rand)):
        for split, part in parts.items():
            files[f"{name}/{split}.csv"] = _csv(part, False)
    counts = {r.id: 0 for r in rules}
    for r in rows:
        if r[4] in counts:
            counts[r[4]] += 1
    summary = {"measured_rates": {k: round(v[2], 4) for k, v in measure_rule_rates(rows).items()},
               "measured_rates_all_bodies": {k: round(v[2], 4) for k, v in measure_rule_rates(rows, True).items()},
               "seed": seed, "countries": n_countries, "facts": len(rows),
               "entities": len({r[0] for r in rows} | {r[2] for r in rows}), "relations": len({r[1] for r in rows}),
               "noise": sum(r[4] == "noise" for r in rows), "seed_events": sum(r[4] == "seed" for r in rows),
               "facts_per_rule": counts,
               "splits": {k: {s: len(v) for s, v in p.items()} for k, p in (("chronological", chrono), ("random", rand))}}
    files["rules.json"] = json.dumps({"generator": "tpar.data.sample_world", "seed": seed, "start": START.isoformat(),
                                      "days": DAYS, "rules": [asdict(r) for r in rules], "summary": summary},
                                     indent=2) + "\n"
    files["examples.json"] = json.dumps({"examples": example_questions(chrono["test"], rules)}, indent=2) + "\n"
    for rel, text in files.items():
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return summary


def example_questions(test_rows, rules) -> list[dict]:
    """Per rule, the question behind the earliest test-week fact it produced (for the app)."""
    out = []
    for rule in rules:
        rows = sorted(r for r in test_rows if r[4] == rule.id)
        if not rows:
            continue
        s, rel, o, day, _ = min(rows, key=lambda r: (r[3], r[0], r[2]))
        out.append({"rule": rule.id, "description": rule.description, "subject": s, "relation": rel, "time": day,
                    "answer": o, "setting": "interpolation" if rule.delay_days[1] == 0 else "extrapolation"})
    return out


def measure_rule_rates(rows, include_noise_bodies: bool = False) -> dict[str, tuple[int, int, float]]:
    """How often each rule's body is followed by its head in the data: rule id -> (body instances,
    followed by the head, rate). Heads are looked up in the facts themselves, not in the labels. Body
    facts labelled ``noise`` are left out unless ``include_noise_bodies`` (rules never react to noise,
    so counting them dilutes the rate by the noise share of that relation). Bodies whose head window
    would fall after the last day are not counted."""
    day = {d: i for i, d in enumerate(sorted({r[3] for r in rows}))}
    start = dt.date.fromisoformat(min(day))
    t_of = lambda iso: (dt.date.fromisoformat(iso) - start).days  # noqa: E731
    facts = {(s, r, o, t_of(d)) for s, r, o, d, *_ in rows}
    by_rel: dict[str, list[tuple[str, str, int]]] = {}
    for s, r, o, d, label in rows:
        if include_noise_bodies or label != "noise":
            by_rel.setdefault(r, []).append((s, o, t_of(d)))
    last = max(t for *_, t in facts)

    def rate(body_rel: str, head, lo: int, hi: int, swap: bool) -> tuple[int, int, float]:
        n = k = 0
        for a, b, t in by_rel.get(body_rel, []):
            if t + hi > last:
                continue
            n += 1
            s, o = (b, a) if swap else (a, b)
            k += any((s, head, o, t + d) in facts for d in range(lo, hi + 1))
        return n, k, (k / n if n else float("nan"))

    def composition() -> tuple[int, int, float]:
        allies: dict[str, list[tuple[str, int]]] = {}
        for x, c, t1 in by_rel.get("Form alliance with", []):
            allies.setdefault(c, []).append((x, t1))
        n = k = 0
        for c, b, t in by_rel.get("Sign agreement with", []):
            if t + 2 > last:
                continue
            for x, t1 in allies.get(c, []):
                if t - 60 <= t1 < t and x != b:
                    n += 1
                    k += any((x, "Consult", b, t + d) in facts for d in (1, 2))
        return n, k, (k / n if n else float("nan"))

    return {
        "composition": composition(),
        "reciprocity": rate("Make a visit", "Host a visit", 0, 0, True),
        "escalation": rate("Threaten", "Mobilize against", 1, 3, True),
        "accusation_recency": rate("Accuse", "Criticize", 1, 2, False),
        "aid_repetition": rate("Provide aid to", "Provide aid to", 5, 20, False),
        "weekly_meetings": rate("Meet", "Meet", 7, 7, False),
        "monthly_summits": rate("Hold summit with", "Hold summit with", 30, 30, False),
    }
