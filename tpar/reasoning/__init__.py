"""A checkpoint on a data set answers and explains: predictions for a user's question
(:mod:`.prediction`), top temporal paths and per-layer traces (:mod:`.explanation`), planted-rule
recovery (:mod:`.rules`) and teaching views of the learned time encoding (:mod:`.teaching`)."""
