"""TemporalKG -> what a query may see: the CSR index over facts and their inverses (:mod:`.index`),
queries and the two settings (:mod:`.queries`), and backgrounds, the no-leakage rules (:mod:`.background`)."""
