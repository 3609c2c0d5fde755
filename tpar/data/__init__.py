"""Files -> :class:`~tpar.data.kg.TemporalKG`: vocabularies (:mod:`.vocab`), the time axis
(:mod:`.timeaxis`), the graph of facts per split (:mod:`.kg`), benchmark folders (:mod:`.benchmarks`),
user tables (:mod:`.tables`), the one entry point (:mod:`.loading`), uploads with a validation report
(:mod:`.upload`), safe names (:mod:`.names`), the sample world (:mod:`.sample_world`) and the data sets
found here (:mod:`.catalog`)."""
