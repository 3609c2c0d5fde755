"""How a TPAR model is fitted: the trainer and its state, what each epoch trains on, the learning-rate
schedule, early stopping, snapshots and resume, distributed training, the training defaults and
time estimates. What the paper defines (the network) lives in :mod:`tpar.model`, which never imports
this package."""
