"""The evaluation protocol: rank types and metrics (:mod:`.ranks`), the time-aware filter
(:mod:`.filtering`), the evaluator (:mod:`.protocol`), baselines (:mod:`.baselines`) and written
reports (:mod:`.reports`)."""
