"""Screen: the uniform average of several checkpoints' weights (same architecture, e.g. two stages of one model)
against the last checkpoint alone, on the same seeded valid questions, one thread.
Usage: python average_screen.py DATA QUESTIONS CKPT [CKPT ...] (the last is the one compared with)."""
import sys, time, json
import torch
torch.set_num_threads(1)
from tpar.data.loading import load_dataset
from tpar.model.checkpoint import Checkpoint
from tpar.evaluation.protocol import evaluate
from tpar.model.ranker import ModelRanker
kg = load_dataset(sys.argv[1]); n = int(sys.argv[2]); paths = sys.argv[3:]
cks = [Checkpoint.load(p) for p in paths]
def run(name, model):
    t0 = time.perf_counter()
    res = evaluate(kg, ModelRanker(model.eval(), "cpu", micro_batch=16), cks[-1].setting, "valid", max_queries=n, seed=0, progress=False)
    print(json.dumps({"model": name, "mrr": round(100*res.metrics().mrr, 2), "s": round(time.perf_counter()-t0)}), flush=True)
m = cks[-1].build_model("cpu"); run(paths[-1], m)
sd = {k: sum(c.weights[k].double() for c in cks) / len(cks) for k in cks[-1].weights}
m.load_state_dict({k: v.to(cks[-1].weights[k].dtype) for k, v in sd.items()}, strict=False); run("avg", m)
