"""Running work outside a request: background training jobs in their own processes (:mod:`.jobs`) and
the speed benchmark (:mod:`.bench`), threads (:mod:`.threads`) and bounded heap growth (:mod:`.memory`)."""
