"""The TPAR model: configurations (:mod:`.config`), the layers with the paper's maths (:mod:`.layers`),
the network that runs the L recursive steps (:mod:`.network`), the per-link kernels (:mod:`.kernels`,
C++ source in ``csrc/``), device choice (:mod:`.device`), checkpoints (:mod:`.checkpoint`) and model
cards (:mod:`.card`), the checkpoints found here (:mod:`.registry`), the model as a ranker
(:mod:`.ranker`) and training (:mod:`.training`)."""
