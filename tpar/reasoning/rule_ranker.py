"""Distilled rules as a predictor: the apply step of TLogic (Liu et al., AAAI 2022, Section 4.3) for the
rules of :mod:`tpar.reasoning.distilled_rules`, scored by the project's evaluation protocol.

For a question (s, r, ?, t_q) (a subject question asks r⁻¹ and uses the rules learned from subject
questions, ``head_inverse``), the ``top`` best rules of its head (by their score; rules that cannot
ground in the setting -- a link at or after t_q in extrapolation -- and rules never right are left out)
are grounded in the question's background: from s, each body atom in order follows the background's
links of its relation and direction whose gap t_q − t falls in the atom's time bucket. The entities a
grounding ends at (never s itself: a rule's path never returns to the question's entity) are the
candidates. Each rule that reaches a candidate c adds its weight, the Wilson lower bound W⁻ of its
confidence, by a noisy-or (TLogic's aggregation):

    score(c) = 1 − Π_{rules ρ reaching c} (1 − W⁻(ρ)),

each rule counted once per candidate however many groundings reach c. Candidates no rule reaches
score 0 and tie (realistic ranks). The lower bound rather than the confidence keeps a rule seen twice
and right twice (confidence 1, W⁻ 0.34) from outvoting one right in 40 of 50 questions (W⁻ 0.67).

No leakage: links come only from :meth:`tpar.graph.background.Background.edges_from`, the protocol's
admission rule (extrapolation: t < t_q; interpolation: never the question's own fact or its inverse).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tpar.data.kg import TemporalKG
from tpar.errors import DataError
from tpar.graph.background import Background
from tpar.graph.queries import QueryBatch, Setting
from tpar.reasoning.distilled_rules import BUCKET_EDGES, GapScale, RuleSet, wilson_lower

#: bucket ids run from -(n-1) to n-1; shifted by this to index a table
_SHIFT = len(BUCKET_EDGES) - 1
_NUM_BUCKETS = 2 * _SHIFT + 1


@dataclass(frozen=True)
class GroundableRule:
    """A rule in ids: its hops (relation walked in [0, 2R), signed time bucket) and its weight."""

    hops: tuple[tuple[int, int], ...]
    weight: float
    text: str = ""

    def groundable(self, setting: Setting) -> bool:
        """Extrapolation admits only links before t_q: a hop at the same time or after never grounds."""
        return setting is Setting.INTERPOLATION or all(b > 0 for _, b in self.hops)


class RuleRanker:
    """Ranks every entity by the rules of a :class:`~tpar.reasoning.distilled_rules.RuleSet` (module docstring);
    a :class:`~tpar.evaluation.protocol.Ranker`."""

    name = "rules"

    def __init__(self, rules: RuleSet, kg: TemporalKG, *, top: int = 20, confidence_share: float = 1.0,
                 decay: float = 0.1, chunk: int = 16) -> None:
        if top < 1:
            raise DataError(f"rules per head must be at least 1, not {top}")
        if not 0.0 <= confidence_share <= 1.0:  # NaN fails too
            raise DataError(f"the confidence share (--confidence-share) must be from 0 to 1, not {confidence_share}")
        if not 0.0 <= decay < float("inf"):
            raise DataError(f"the decay (--decay) must be a finite number at least 0, not {decay}")
        self.rule_set, self.top, self.chunk = rules, int(top), int(chunk)
        self.confidence_share, self.decay = float(confidence_share), float(decay)
        self.scale = GapScale.of(kg.time_axis)
        if self.scale != rules.scale:
            raise DataError(f"the rules were distilled on a time axis in {rules.scale.unit} "
                            f"({rules.scale.per_step:g} per step), the data's is in {self.scale.unit} "
                            f"({self.scale.per_step:g} per step)")
        R = kg.num_relations
        self.num_entities, self.num_relations = kg.num_entities, R
        self.by_head: dict[int, list[GroundableRule]] = {}
        missing = set()
        self.unusable_rules = 0  # rules naming a relation the data lacks (said by coverage_notes)
        for rule in rules.rules:  # already best first within each head and direction
            names = [rule.head] + [a.relation for a in rule.body]
            if any(n not in kg.relations for n in names):
                missing.update(n for n in names if n not in kg.relations)
                self.unusable_rules += 1
                continue
            head = kg.relations.id(rule.head) + (R if rule.head_inverse else 0)
            hops = tuple((kg.relations.id(a.relation) + (R if a.inverse else 0), a.bucket) for a in rule.body)
            self.by_head.setdefault(head, []).append(
                GroundableRule(hops, wilson_lower(rule.correct, rule.support), rule.text(rules.scale)))
        self.missing_relations = sorted(missing)
        if rules.rules and not self.by_head:
            raise DataError(f"none of the rules' relations is in {kg.name} (e.g. {sorted(missing)[:3]}): "
                            "the rules come from another data set")
        self._edges = torch.tensor(BUCKET_EDGES, dtype=torch.float64)

    def coverage_notes(self, kg: TemporalKG, split: str) -> list[str]:
        """Why some questions of ``split`` cannot be answered by these rules (their head has no rules)."""
        notes = []
        if self.unusable_rules:
            notes.append(f"{self.unusable_rules:,} of the {len(self.rule_set.rules):,} rules name relations that "
                         f"{kg.name} does not have (e.g. {', '.join(repr(n[:60]) for n in self.missing_relations[:3])}): "
                         "they are set aside")
        facts = kg.facts(split)
        heads = {h % kg.num_relations for h in self.by_head}
        missing = sorted({int(r) for r in np.unique(facts[:, 1])} - heads) if len(facts) else []
        if not missing:
            return notes
        share = float(np.isin(facts[:, 1], missing).mean())
        return notes + [f"no rules for {len(missing)} of the relations of the {split} split ({100 * share:.1f}% of its facts, "
                f"e.g. {kg.relations.name(missing[0])!r}): their questions tie every entity at score 0"]

    def rules_for(self, head: int, setting: Setting) -> list[GroundableRule]:
        """The ``top`` best rules of a head (relation id in [0, 2R)) that can ground in ``setting`` and weigh > 0."""
        return [r for r in self.by_head.get(head, []) if r.weight > 0 and r.groundable(setting)][:self.top]

    def buckets(self, steps_before: torch.Tensor) -> torch.Tensor:
        """:meth:`GapScale.buckets` on a tensor of gaps (t_q − t in steps)."""
        g = steps_before.double() * self.scale.per_step
        whole = torch.floor(g.abs() + 1e-9)
        idx = torch.searchsorted(self._edges, whole, right=True) - 1
        return (torch.sign(g).long() * idx)

    def score(self, batch: QueryBatch, background: Background) -> torch.Tensor:
        out = torch.zeros(len(batch), self.num_entities)
        for start in range(0, len(batch), self.chunk):
            part = batch[slice(start, start + self.chunk)]
            out[start:start + len(part)] = self._score(part, background)
        return out

    def _score(self, batch: QueryBatch, background: Background) -> torch.Tensor:
        E, R2 = self.num_entities, 2 * self.num_relations
        B = len(batch)
        log_miss = torch.zeros(B, E, dtype=torch.float64)  # Σ log(1 − w) over the rules reaching each candidate
        table: list[GroundableRule] = []
        pair_query: list[int] = []
        for i, rel in enumerate(batch.relation.tolist()):
            for rule in self.rules_for(rel, background.setting):
                pair_query.append(i)
                table.append(rule)
        if not table:
            return log_miss.float()
        L = max(len(r.hops) for r in table)
        hop_rel = torch.full((len(table), L), -1, dtype=torch.long)
        hop_bucket = torch.zeros((len(table), L), dtype=torch.long)
        for j, rule in enumerate(table):
            for d, (rel, b) in enumerate(rule.hops):
                hop_rel[j, d], hop_bucket[j, d] = rel, b
        length = torch.tensor([len(r.hops) for r in table])
        weight = torch.tensor([r.weight for r in table], dtype=torch.float64)
        pq = torch.tensor(pair_query)
        state_pair = torch.arange(len(table))
        state_node = batch.subject.cpu()[pq]
        state_recency = torch.ones(len(table), dtype=torch.float64)  # set by the first link
        subject = batch.subject.cpu()
        t_q = batch.time.cpu()
        ix = background.index
        for d in range(L):
            if state_pair.numel() == 0:
                break
            q = pq[state_pair]
            key = q * E + state_node
            uniq, u_of_state = torch.unique(key, return_inverse=True)
            nodes_u, query_u = uniq % E, uniq // E
            edges, owner = background.edges_from(nodes_u.to(ix.src.device), query_u.to(ix.src.device), batch)
            edges, owner = edges.cpu(), owner.cpu()
            if edges.numel() == 0:
                break
            e_bucket = self.buckets(t_q[query_u[owner]] - ix.time.cpu()[edges])
            e_key = (owner * R2 + ix.rel.cpu()[edges]) * _NUM_BUCKETS + (e_bucket + _SHIFT)
            e_key, order = torch.sort(e_key)
            e_dst = ix.dst.cpu()[edges][order]
            e_time = ix.time.cpu()[edges][order]
            want = (u_of_state * R2 + hop_rel[state_pair, d]) * _NUM_BUCKETS + (hop_bucket[state_pair, d] + _SHIFT)
            lo = torch.searchsorted(e_key, want)
            hi = torch.searchsorted(e_key, want, right=True)
            pos, which = ix.expand(lo, hi)  # pos: index into the sorted edges; which: the state it extends
            new_pair, new_node = state_pair[which], e_dst[pos]
            if d == 0:  # TLogic's recency: of the link leaving the question's entity
                gap = (t_q[pq[new_pair]] - e_time[pos]).abs().double() * self.scale.per_step
                recency = torch.exp(-self.decay * gap)
            else:
                recency = state_recency[which]
            keep = new_node != subject[pq[new_pair]]  # a rule's path never returns to the question's entity
            new_pair, new_node, recency = new_pair[keep], new_node[keep], recency[keep]
            pair_node, inv = torch.unique(new_pair * E + new_node, return_inverse=True)  # each (rule, entity) once
            best = torch.zeros(pair_node.shape[0], dtype=torch.float64).scatter_reduce_(0, inv, recency, "amax")
            new_pair, new_node = pair_node // E, pair_node % E
            done = length[new_pair] == d + 1
            if done.any():
                p, c = new_pair[done], new_node[done]
                a = self.confidence_share
                f = (a * weight[p] + (1 - a) * best[done]).clamp(max=1 - 1e-12)
                log_miss.index_put_((pq[p], c), torch.log1p(-f), accumulate=True)
            state_pair, state_node, state_recency = new_pair[~done], new_node[~done], best[~done]
        return (-torch.expm1(log_miss)).float()

    def params(self) -> dict:
        return {"rules_per_head": self.top, "confidence_share": self.confidence_share, "decay": self.decay,
                "aggregation": "noisy-or over rules of a·W⁻(confidence) + (1 − a)·exp(−λ·Δt of the first link)",
                "rules": {"meta": self.rule_set.meta, "count": len(self.rule_set.rules)},
                "relations_not_in_data": self.missing_relations}
