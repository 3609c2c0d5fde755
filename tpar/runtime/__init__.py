"""Running work outside a request: background training jobs in their own processes (:mod:`.jobs`) and
the speed benchmark (:mod:`.bench`)."""
