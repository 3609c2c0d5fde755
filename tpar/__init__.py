"""TPAR Explorer: temporal-path reasoning over temporal knowledge graphs.

Data flows one way: files (:mod:`tpar.readers`) -> :class:`tpar.data.TemporalKG` ->
:class:`tpar.index.TemporalGraphIndex` -> rankers (:mod:`tpar.baselines`, later the model) ->
:mod:`tpar.evaluation` -> CLI / app.
"""

from tpar.data import TemporalKG
from tpar.errors import DataError
from tpar.evaluation import EvaluationResult, Setting, evaluate
from tpar.index import TemporalGraphIndex
from tpar.readers import load_dataset
from tpar.timeaxis import TimeAxis
from tpar.vocab import Vocabulary

__version__ = "0.1.0"

__all__ = [
    "DataError",
    "EvaluationResult",
    "Setting",
    "TemporalGraphIndex",
    "TemporalKG",
    "TimeAxis",
    "Vocabulary",
    "evaluate",
    "load_dataset",
    "__version__",
]
