"""Training (all three settings), checkpoints (round trip, refusals), resume, and the CLI commands."""

from __future__ import annotations

import json

import pytest
import torch

from tpar.evaluation.protocol import evaluate
from tpar.graph.background import Background
from tpar.graph.queries import OBJECT, QueryBatch
from tpar.model.checkpoint import Checkpoint
from tpar.model.ranker import ModelRanker
from tpar.cli import main
from tpar.model.config import ModelConfig, RunConfig, TrainConfig
from tpar.errors import DataError
from tpar.data.loading import load_dataset
from helpers import small_kg
from tpar.training.snapshots import resume_path
from tpar.training.trainer import TrainingCallbacks, train


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A small periodic world: each day i, person i%6 meets (i+1)%6 and is called back."""
    d = tmp_path_factory.mktemp("world")
    rows = ["subject,relation,object,time"]
    people = [f"P{i}" for i in range(6)]
    for day in range(60):
        a, b = people[day % 6], people[(day + 1) % 6]
        date = f"2024-{1 + day // 28:02d}-{1 + day % 28:02d}"
        rows += [f"{a},meets,{b},{date}", f"{b},calls,{a},{date}"]
        if day % 3 == 0:
            rows.append(f"{a},visits,{people[(day + 3) % 6]},{date}")
    p = d / "world.csv"
    p.write_text("\n".join(rows) + "\n")
    return p


def tiny_run(setting, **kw):
    return RunConfig(ModelConfig(dim=8, attn_dim=3, num_layers=2, dropout=0.1),
                     TrainConfig(setting=setting, lr=5e-3, batch_size=8, micro_batch=4, epochs=kw.pop("epochs", 2),
                                 patience=5, max_valid_queries=0, checkpoint_every=kw.pop("checkpoint_every", 1e9),
                                 seed=kw.pop("seed", 0), **kw))


@pytest.mark.parametrize("setting", ["extrapolation", "interpolation", "unified"])
def test_train_writes_a_usable_checkpoint(world, tmp_path, setting):
    kg = load_dataset(world)
    out = tmp_path / "m.tpar"
    res = train(kg, tiny_run(setting), out, progress=False)
    assert out.is_file() and not resume_path(out).exists()
    assert res.stopped == "completed" and len(res.history) == 2
    ck = Checkpoint.load(out)
    assert ck.setting == setting and ck.data_fingerprint == kg.fingerprint
    assert ck.relations == list(kg.relations.names)
    assert ck.extra["seed"] == 0 and ck.extra["seconds"] > 0 and "hardware" in ck.extra
    keys = {"extrapolation": ["valid_extrapolation_mrr"], "interpolation": ["valid_interpolation_mrr"],
            "unified": ["valid_extrapolation_mrr", "valid_interpolation_mrr"]}[setting]
    for k in keys:
        assert 0 <= ck.history[-1][k] <= 1
    # usable: the saved weights are the best epoch's -- rebuilt, they score exactly the validation MRR
    # recorded for that epoch (all valid queries: max_valid_queries=0)
    best = ck.history[ck.extra["best_epoch"] - 1]
    assert best["valid_mrr"] == max(h["valid_mrr"] for h in ck.history)
    ranker = ModelRanker(ck.build_model(), "cpu", micro_batch=4)
    for k in keys:
        kind = k[len("valid_"):-len("_mrr")]
        mrr = evaluate(kg, ranker, kind, "valid", progress=False, batch_size=64).metrics("realistic").mrr
        assert mrr == pytest.approx(best[k], abs=1e-9), k


def test_same_seed_same_checkpoint(world, tmp_path):
    kg = load_dataset(world)
    a = train(kg, tiny_run("extrapolation", epochs=1), tmp_path / "a.tpar", progress=False).checkpoint
    b = train(kg, tiny_run("extrapolation", epochs=1), tmp_path / "b.tpar", progress=False).checkpoint
    assert a.weights and a.weights.keys() == b.weights.keys()
    for k in a.weights:
        assert torch.equal(a.weights[k], b.weights[k]), k


def test_cancel_then_resume_equals_uninterrupted(world, tmp_path):
    kg = load_dataset(world)
    full_steps = []
    full = train(kg, tiny_run("extrapolation", epochs=2), tmp_path / "full.tpar", progress=False,
                 callbacks=TrainingCallbacks(on_step=lambda info: full_steps.append(info))).checkpoint
    steps = []

    def stop_after_three(info):
        steps.append(info.batch)
        return len(steps) == 3

    out = tmp_path / "r.tpar"
    res = train(kg, tiny_run("extrapolation", epochs=2), out, progress=False,
                callbacks=TrainingCallbacks(on_step=stop_after_three))
    assert res.stopped == "cancelled" and resume_path(out).is_file()
    resumed_steps = []
    res2 = train(kg, tiny_run("extrapolation", epochs=2), out, resume=True, progress=False,
                 callbacks=TrainingCallbacks(on_step=lambda info: resumed_steps.append(info)))
    assert res2.stopped == "completed" and not resume_path(out).exists()
    # it continued after step 3 (a restart from scratch would also end with equal weights)
    assert len(resumed_steps) == len(full_steps) - 3
    assert (resumed_steps[0].epoch, resumed_steps[0].batch) == (0, 4)
    assert full.weights and full.weights.keys() == res2.checkpoint.weights.keys()
    for k in full.weights:
        assert torch.allclose(full.weights[k], res2.checkpoint.weights[k], atol=1e-6), k
    # the interrupted epoch's mean loss is of all its steps, the 3 before the resume too (it was of the steps
    # after the resume only), and its seconds count the time before the resume
    assert [h["loss"] for h in res2.history] == pytest.approx([h["loss"] for h in full.history], abs=1e-6)
    epoch1 = [s.loss for s in full_steps if s.epoch == 0]
    assert res2.history[0]["loss"] == pytest.approx(sum(epoch1) / len(epoch1), abs=1e-6)
    assert sum(s.loss for s in full_steps[3:len(epoch1)]) / (len(epoch1) - 3) != pytest.approx(
        res2.history[0]["loss"], abs=1e-6)  # the old figure differs: the test can tell the two apart
    assert res2.history[0]["seconds"] > 0


def test_a_resume_file_of_an_older_version_without_the_epochs_loss_still_resumes(world, tmp_path):
    """Resume files written before the epoch's loss and time were kept read those as 0: such a run resumes, and
    its interrupted epoch's loss is the mean of the steps after the resume (all it can know)."""
    from tpar.model.checkpoint import Checkpoint

    kg, out = load_dataset(world), tmp_path / "old.tpar"
    res = train(kg, tiny_run("extrapolation", epochs=1), out, progress=False,
                callbacks=TrainingCallbacks(on_step=lambda info: info.batch == 2))
    assert res.stopped == "cancelled"
    ck, state, pos = Checkpoint.load(resume_path(out), with_state=True)
    assert pos["loss_steps"] == 2 and pos["loss_sum"] > 0 and pos["epoch_seconds"] > 0
    for key in ("loss_sum", "loss_steps", "epoch_seconds"):
        del pos[key]
    ck.save(resume_path(out), optimizer=state, position=pos)
    after = []
    res2 = train(kg, tiny_run("extrapolation", epochs=1), out, resume=True, progress=False,
                 callbacks=TrainingCallbacks(on_step=lambda info: after.append(info.loss)))
    assert res2.stopped == "completed"
    assert res2.history[0]["loss"] == pytest.approx(sum(after) / len(after), abs=1e-6)


def test_resume_keeps_the_interrupted_runs_setting(world, tmp_path):
    """A resume asked with another setting continues the interrupted run as it was: its checkpoint
    says the interrupted run's setting, and the run's own config wins throughout."""
    kg = load_dataset(world)
    out = tmp_path / "r.tpar"
    res = train(kg, tiny_run("interpolation", epochs=1), out, progress=False,
                callbacks=TrainingCallbacks(on_step=lambda info: info.batch == 2))
    assert res.stopped == "cancelled"
    res2 = train(kg, tiny_run("extrapolation", epochs=1), out, resume=True, progress=False)
    assert res2.checkpoint.setting == "interpolation"
    assert res2.checkpoint.config.train.setting == "interpolation"
    assert Checkpoint.load(out).setting == "interpolation"


def test_checkpoint_refusals(world, tmp_path):
    kg = load_dataset(world)
    out = tmp_path / "m.tpar"
    train(kg, tiny_run("extrapolation", epochs=1), out, progress=False)
    # tampered weights
    payload = torch.load(out, weights_only=True)
    k = next(iter(payload["weights"]))
    payload["weights"][k] = payload["weights"][k] + 1
    bad = tmp_path / "tampered.tpar"
    torch.save(payload, bad)
    with pytest.raises(DataError, match="sha256"):
        Checkpoint.load(bad)
    # a pickle that would run code on load
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))
    evil = tmp_path / "evil.tpar"
    torch.save({"format": "tpar-checkpoint-v1", "x": Evil()}, evil)
    with pytest.raises(DataError, match="refused") as refused:
        Checkpoint.load(evil)
    said = str(refused.value)  # tpar's own sentence, never torch's advice to load with weights_only=False
    assert said.endswith("(it names print); nothing in it was run") and "weights_only" not in said
    junk = tmp_path / "junk.tpar"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(DataError, match="not a readable checkpoint"):
        Checkpoint.load(junk)
    # data it does not fit
    other = tmp_path / "other.csv"
    other.write_text("subject,relation,object,time\na,likes,b,2024-01-01\nb,likes,c,2024-01-02\nc,likes,a,2024-01-03\n")
    with pytest.raises(DataError, match="its relations differ"):
        Checkpoint.load(out).check_fits(load_dataset(other))
    with pytest.raises(DataError, match="match 0 of 1 relations, 0% of the facts, below the required 95.0%"):
        Checkpoint.load(out).fit(load_dataset(other))


def test_cli_train_propagation_default(world, tmp_path, capsys):
    """A new model trains with the sparse default unless its config file names a propagation or
    --propagation exact says otherwise; the choice is printed and saved in the checkpoint."""
    from tpar.model.config import sparse_propagation

    d = tiny_run("extrapolation", epochs=1).to_dict()
    bare = {**d, "model": {k: v for k, v in d["model"].items()
                           if k not in ("history_window", "link_cap", "recent_repeats", "exact_steps", "top_k", "priority")}}
    cfg, named = tmp_path / "bare.json", tmp_path / "named.json"
    cfg.write_text(json.dumps(bare))
    named.write_text(json.dumps({**bare, "model": {**bare["model"], "link_cap": 0}}))
    base = ["train", "--data", str(world), "--setting", "extrapolation", "--quiet"]
    runs = {"default": ["--config", str(cfg)], "exact": ["--config", str(cfg), "--propagation", "exact"],
            "named": ["--config", str(named)], "refined": ["--config", str(cfg), "--link-cap", "4"]}
    got = {}
    for name, extra in runs.items():
        out = tmp_path / f"{name}.tpar"
        assert main(base + extra + ["--out", str(out)]) == 0
        got[name] = Checkpoint.load(out).config.model
        got[name + "_said"] = capsys.readouterr().err
    want = sparse_propagation("extrapolation")
    assert {k: getattr(got["default"], k) for k in want} == want
    assert "the sparse default" in got["default_said"] and got["default"].propagation in got["default_said"]
    assert got["exact"].propagation == "exact" and got["named"].propagation == "exact"
    assert got["refined"].link_cap == 4 and got["refined"].exact_steps == want["exact_steps"]
    # the Python API reads a config file as the CLI does (new-user walk 38: RunConfig.load + train() trained exact)
    from tpar.model.config import config_for_new_model

    for file, model in ((cfg, got["default"]), (named, got["named"])):
        api, _ = config_for_new_model(file, "extrapolation")
        from dataclasses import replace  # the data's sizes are filled in by training

        assert replace(api.model, num_relations=model.num_relations, time_span=model.time_span) == model, file.name


def test_cli_train_evaluate_predict(world, tmp_path, capsys):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(tiny_run("unified", epochs=1).to_dict()))
    out = tmp_path / "cli.tpar"
    assert main(["train", "--data", str(world), "--setting", "unified", "--config", str(cfg), "--out", str(out),
                 "--quiet"]) == 0
    summary = capsys.readouterr().out  # in words and tables, not raw JSON dicts
    assert summary.startswith("Training done") and "valid MRR %" in summary and "{" not in summary
    assert main(["train", "--data", str(world), "--setting", "unified", "--config", str(cfg), "--out",
                 str(tmp_path / "cli2.tpar"), "--quiet", "--json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert as_json["best_epoch"] >= 1 and "valid_subset" in as_json["metrics"]
    js, ranks = tmp_path / "e.json", tmp_path / "ranks.csv"
    assert main(["evaluate", "--checkpoint", str(out), "--data", str(world), "--split", "test", "--setting",
                 "interpolation", "--json", str(js), "--ranks-csv", str(ranks), "--quiet"]) == 0
    d = json.loads(js.read_text())
    assert d["setting"] == "interpolation" and d["method"] == "tpar"
    assert set(d["realistic"]) == {"mrr", "hits@1", "hits@3", "hits@10"}
    lines = ranks.read_text().strip().split("\n")
    assert lines[0] == "subject,relation,object,time,direction,optimistic,pessimistic,realistic"
    assert len(lines) == 1 + d["num_queries"]
    capsys.readouterr()
    assert main(["predict", "--checkpoint", str(out), "--data", str(world), "--subject", "P0", "--relation", "meets",
                 "--time", "2024-03-10", "--top", "3", "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["setting"] == "extrapolation" and len(p["answers"]) == 3
    # the top 3 of the calibrated softmax over every entity's score, computed here from the checkpoint's model
    kg = load_dataset(world)
    s, r, t = kg.entities.id("P0"), kg.relations.id("meets"), kg.time_axis.parse("2024-03-10")
    assert t > kg.all_facts()[:, 3].max()  # after the data: every fact is history
    bg = Background.from_facts(kg.all_facts(), kg.num_entities, kg.num_relations, "extrapolation")
    with torch.no_grad():
        scores = Checkpoint.load(out).build_model()(
            QueryBatch(*(torch.tensor([x]) for x in (s, r, t, -1, OBJECT))), bg)[0].double()
    temperature = Checkpoint.load(out).extra["calibration"]["extrapolation"]["temperature"]  # fitted after training
    assert p["temperature"] == temperature
    probs = torch.softmax(scores / temperature, 0)
    top = torch.argsort(scores, descending=True, stable=True)[:3].tolist()
    assert [a["entity"] for a in p["answers"]] == [kg.entities.name(e) for e in top]
    assert [a["probability"] for a in p["answers"]] == pytest.approx(probs[top].tolist(), rel=1e-5, abs=1e-9)
    assert main(["predict", "--checkpoint", str(out), "--data", str(world), "--subject", "Nobody", "--relation",
                 "meets", "--time", "2024-03-10"]) == 2
    assert "unknown entity 'Nobody'" in capsys.readouterr().err
    bad_cfg = tmp_path / "bad.json"
    bad_cfg.write_text('{"model": {"dimension": 3}}')
    assert main(["train", "--data", str(world), "--setting", "extrapolation", "--config", str(bad_cfg), "--out",
                 str(tmp_path / "x.tpar"), "--quiet"]) == 2
    assert "unknown ModelConfig option" in capsys.readouterr().err


def _rewrite(src, dst, edit):
    """Copy checkpoint ``src`` to ``dst`` with ``edit(payload)`` applied (as a tamperer would)."""
    payload = torch.load(src, weights_only=True)
    edit(payload)
    torch.save(payload, dst)
    return dst


@pytest.mark.slow
def test_checkpoint_integrity_covers_metadata_and_bounds_sizes(world, tmp_path, monkeypatch):
    import zipfile

    from tpar.model import checkpoint as ckmod
    from tpar.model.registry import find_checkpoints

    kg = load_dataset(world)
    good = tmp_path / "good.tpar"
    train(kg, tiny_run("extrapolation", epochs=1), good, progress=False)
    ck = Checkpoint.load(good)
    assert json.loads(torch.load(good, weights_only=True)["meta"])["sha256"]

    def set_meta(**changes):
        def edit(payload):
            meta = json.loads(payload["meta"])
            for path, value in changes.items():
                target = meta
                *parents, last = path.split("__")
                for k in parents:
                    target = target[k]
                target[last] = value
            payload["meta"] = json.dumps(meta)
        return edit

    # a changed activation (weights untouched) is refused: the digest covers the metadata
    bad = _rewrite(good, tmp_path / "act.tpar", set_meta(config__model__activation="relu"))
    with pytest.raises(DataError, match="metadata or weights do not match"):
        Checkpoint.load(bad)
    # ... and a config re-digested to ask for a huge model is refused before the model is built
    def huge(payload):
        meta = json.loads(payload["meta"])
        meta["config"]["model"]["dim"] = 10 ** 7
        meta["sha256"] = ckmod.content_digest(meta, payload["weights"])
        payload["meta"] = json.dumps(meta)
    with pytest.raises(DataError, match="huge.tpar: dim must be between 1 and 4,096"):
        Checkpoint.load(_rewrite(good, tmp_path / "huge.tpar", huge))

    def large(payload):  # within the limits, but not the stored weights' size
        meta = json.loads(payload["meta"])
        meta["config"]["model"]["dim"] = 4096
        meta["sha256"] = ckmod.content_digest(meta, payload["weights"])
        payload["meta"] = json.dumps(meta)
    with pytest.raises(DataError, match="large.tpar: checkpoint config does not describe its weights"):
        Checkpoint.load(_rewrite(good, tmp_path / "large.tpar", large))
    # wrongly typed and deeply nested metadata: messages, not TypeError / RecursionError
    typed = _rewrite(good, tmp_path / "typed.tpar", set_meta(relations=5))
    with pytest.raises(DataError, match="relations must be a list"):
        Checkpoint.load(typed)
    def long_name(payload):  # echoed in every answer's provenance line: a file name's length at most
        meta = json.loads(payload["meta"])
        meta["data_name"] = "x" * 100_000
        meta["sha256"] = ckmod.content_digest(meta, payload["weights"])
        payload["meta"] = json.dumps(meta)
    with pytest.raises(DataError, match="data_name is 100,000 characters long"):
        Checkpoint.load(_rewrite(good, tmp_path / "named.tpar", long_name))
    nested = _rewrite(good, tmp_path / "nested.tpar",
                      lambda p: p.__setitem__("meta", "[" * 100_000 + "]" * 100_000))
    with pytest.raises(DataError, match="malformed"):
        Checkpoint.load(nested)
    # sizes are checked before anything is inflated
    monkeypatch.setattr(ckmod, "MAX_FILE_BYTES", good.stat().st_size - 1)
    with pytest.raises(DataError, match="larger than a checkpoint may be"):
        Checkpoint.load(good)
    monkeypatch.undo()
    bomb = tmp_path / "bomb.tpar"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data/0", b"\0" * (ckmod.MAX_INFLATED_BYTES + 1))
    assert bomb.stat().st_size < 5 * 2 ** 20
    with pytest.raises(DataError, match="would inflate"):
        Checkpoint.load(bomb)
    # one bad file never breaks the listing: the good one is listed, each bad one named with its reason
    infos, problems = find_checkpoints([tmp_path])
    assert [i.name for i in infos] == ["good"] and len(problems) == 7
    assert all(any(name in p.text for p in problems)
               for name in ("act.tpar", "huge.tpar", "large.tpar", "typed.tpar", "named.tpar", "nested.tpar",
                            "bomb.tpar"))
    assert ck.config.model.activation == Checkpoint.load(good).config.model.activation


@pytest.mark.slow
def test_sigint_during_tpar_train_leaves_a_resumable_snapshot(world, tmp_path):
    """Ctrl-C (or SIGTERM) stops after the step in progress with a resume snapshot of that point;
    --resume continues from there to the end."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "sig.tpar"
    cmd = [sys.executable, "-m", "tpar", "train", "--data", str(world), "--setting", "extrapolation", "--out", str(out),
           "--epochs", "40", "--max-train-queries", "40", "--max-valid-queries", "20", "--patience", "40",
           "--dim", "8", "--num-layers", "2", "--batch-size", "4", "--micro-batch", "4"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    for line in proc.stdout:  # the first epoch's summary: training is under way
        if line.startswith("epoch 1:") or time.time() - t0 > 120:
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "--resume" in err and "Traceback" not in err
    snap = resume_path(out)
    assert snap.is_file()
    _, _, pos = Checkpoint.load(snap, with_state=True)
    assert pos["epoch"] >= 1 and pos["epoch"] < 40
    done = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not snap.exists() and Checkpoint.load(out).extra["stopped"] in ("completed", "early-stopping")
    assert len(Checkpoint.load(out).history) == 40  # every epoch ran once: the interrupted ones were kept


@pytest.mark.parametrize("total, available, want", [
    (1, {"extrapolation": 50, "interpolation": 30}, {"extrapolation": 1, "interpolation": 0}),
    (998, {"extrapolation": 900, "interpolation": 250}, {"extrapolation": 748, "interpolation": 250}),
    (7, {"extrapolation": 10, "interpolation": 10}, {"extrapolation": 4, "interpolation": 3}),
    (0, {"extrapolation": 10, "interpolation": 3}, {"extrapolation": 10, "interpolation": 3}),
    (100, {"extrapolation": 10, "interpolation": 3}, {"extrapolation": 10, "interpolation": 3}),
    (5, {"interpolation": 40}, {"interpolation": 5})])
def test_the_question_budget_is_met_exactly(total, available, want):
    from tpar.training.plan import split_budget

    got = split_budget(total, available)
    assert got == want
    assert sum(got.values()) == (min(total, sum(available.values())) if total else sum(available.values()))


@pytest.mark.parametrize("budget", [1, 3])
def test_a_unified_run_trains_the_budget_it_was_given_and_says_so(tmp_path, budget):
    from tpar.model.card import render

    kg = small_kg(seed=5)
    run = RunConfig(ModelConfig(dim=6, attn_dim=3, num_layers=2, dropout=0.0),
                    TrainConfig(setting="unified", epochs=1, batch_size=2, micro_batch=2, max_train_queries=budget,
                                max_valid_queries=5, seed=0))
    res = train(kg, run, tmp_path / "m.tpar", progress=False)
    assert res.history[0]["queries"] == budget
    card = render(Checkpoint.load(tmp_path / "m.tpar"), "m")
    assert f"questions per epoch {budget} (asked for: {budget})" in card
    # the validation subset as measured, never the cap alone (a split smaller than the cap is all of it)
    n = {h[f"valid_{k}_queries"] for h in res.history for k in ("extrapolation", "interpolation")}
    assert len(n) == 1
    m = n.pop()
    assert 0 < m <= 5
    assert f"Validation history ({m} questions a setting, {'a seeded subset' if m == 5 else 'all of them'}" in card


def test_a_run_interrupted_on_one_device_resumes_on_the_one_asked_for(world, tmp_path):
    """The interrupted run's config wins, except its device: a snapshot written with device 'cuda'
    (a GPU machine) resumes on the CPU when the caller asks for it (or for auto without a GPU)."""
    kg = load_dataset(world)
    out = tmp_path / "r.tpar"
    res = train(kg, tiny_run("extrapolation", epochs=1), out, progress=False,
                callbacks=TrainingCallbacks(on_step=lambda info: info.batch == 2))
    assert res.stopped == "cancelled"
    ck, opt, pos = Checkpoint.load(resume_path(out), with_state=True)
    ck.config.train.device = "cuda"
    ck.config.train.lr = 1e-3  # another config: the file's wins for everything but the device
    ck.save(resume_path(out), optimizer=opt, position=pos)
    res2 = train(kg, tiny_run("extrapolation", epochs=1, device="cpu"), out, resume=True, progress=False)
    assert res2.stopped == "completed"
    assert res2.checkpoint.config.train.device == "cpu" and res2.checkpoint.config.train.lr == 1e-3


def test_warm_start_begins_from_the_checkpoint_and_says_so(world, tmp_path):
    kg = load_dataset(world)
    first = train(kg, tiny_run("interpolation", epochs=1), tmp_path / "a.tpar", progress=False).checkpoint
    from tpar.training.plan import model_config_for
    from tpar.training.trainer import warm_start_model
    model, record = warm_start_model(first, kg, model_config_for(kg, tiny_run("interpolation")),
                                     torch.device("cpu"), "a.tpar")
    for k, v in model.state_dict().items():
        assert torch.equal(v, first.weights[k]), k
    assert record["from"] == "a.tpar" and record["epochs"] == 1
    res = train(kg, tiny_run("interpolation", epochs=1), tmp_path / "b.tpar", progress=False, init=first,
                init_name="a.tpar")
    assert res.checkpoint.extra["warm_start"]["from"] == "a.tpar"
    assert len(res.checkpoint.history) == 1  # its own epochs count from 1
    # another model configuration or other data is refused with the differing field named
    with pytest.raises(DataError, match="dim 8 there, 16 here"):
        bigger = tiny_run("interpolation")
        bigger.model.dim = 16
        train(kg, bigger, tmp_path / "c.tpar", progress=False, init=first)
    # the propagation holds no weights: a model trained one way fine-tunes another (here exact -> top-K)
    from dataclasses import replace
    pruned = tiny_run("interpolation", epochs=1)
    pruned.model = replace(pruned.model.with_exact_propagation(), link_cap=3, top_k=4)
    assert (first.config.model.link_cap, first.config.model.top_k) != (3, 4)
    res = train(kg, pruned, tmp_path / "e.tpar", progress=False, init=first)
    assert (res.checkpoint.config.model.link_cap, res.checkpoint.config.model.top_k) == (3, 4)
    assert res.checkpoint.extra["warm_start"]["config"]["model"]["top_k"] == first.config.model.top_k
    # ... but a learned priority has weights of its own: refused
    with pytest.raises(DataError, match="priority 'score' there, 'learned' here"):
        train(kg, replace(pruned, model=replace(pruned.model, priority="learned")), tmp_path / "f.tpar",
              progress=False, init=first)
    # data whose relations the model does not cover is refused, naming them
    (tmp_path / "alien.csv").write_text("subject,relation,object,time\n" + "".join(
        f"A{i % 5},trades with,B{i % 7},2024-01-{1 + i % 28:02d}\n" for i in range(80)))
    with pytest.raises(DataError, match="trades with"):
        train(load_dataset(tmp_path / "alien.csv"), tiny_run("interpolation"), tmp_path / "d.tpar", progress=False,
              init=first)


def test_a_long_chain_of_warm_starts_loads_and_stays_traceable(world, tmp_path):
    """Training in stages (a run continued across sessions, stage after stage) must never make a model its own
    loader refuses: files written before 2026-11-28 nested each stage's record in the next (``before`` inside
    ``before``), and the sixth stage passed the loader's nesting limit. Both forms load, as one flat chain."""
    kg = load_dataset(world)
    first = train(kg, tiny_run("interpolation", epochs=1), tmp_path / "s0.tpar", progress=False).checkpoint
    nested = None
    for i in range(12):  # the old form: each stage's record inside the next one's
        nested = {"from": f"s{i}.tpar", "epochs": 1, "history": [{"epoch": 1, "loss": 1.0, "queries": 8}],
                  "before": nested}
    first.extra["warm_start"] = nested
    first.save(tmp_path / "old.tpar")
    old = Checkpoint.load(tmp_path / "old.tpar")  # refused ("nested too deeply") before flat chains
    assert [w["from"] for w in old.warm_starts()] == [f"s{i}.tpar" for i in reversed(range(12))]
    assert all("before" not in w for w in old.warm_starts())
    res = train(kg, tiny_run("interpolation", epochs=1), tmp_path / "new.tpar", progress=False, init=old,
                init_name="old.tpar")
    record = res.checkpoint.extra["warm_start"]
    assert record["from"] == "old.tpar" and isinstance(record["before"], list) and len(record["before"]) == 12
    again = Checkpoint.load(tmp_path / "new.tpar")
    assert [w["from"] for w in again.warm_starts()] == ["old.tpar"] + [f"s{i}.tpar" for i in reversed(range(12))]


def test_a_warm_start_from_other_data_fine_tunes_with_relations_matched_by_name(world, tmp_path):
    """Other data (new entities, relations spelled otherwise, one new relation): each matched relation's
    embedding rows (r, its inverse r + R, and the self-loops' identity row) start from the model's own; the new
    relation's rows from a fresh initialisation; the record names the data it came from."""
    from tpar.training.plan import model_config_for
    from tpar.training.trainer import warm_start_model

    kg = load_dataset(world)
    first = train(kg, tiny_run("extrapolation", epochs=1), tmp_path / "a.tpar", progress=False).checkpoint
    rows = ["subject,relation,object,time"]
    for day in range(40):  # other people, MEETS / CALLS spelled otherwise, and a relation of its own
        a, b = f"Q{day % 4}", f"Q{(day + 1) % 4}"
        date = f"2024-03-{1 + day % 28:02d}" if day < 28 else f"2024-04-{day - 27:02d}"
        rows += [f"{a},MEETS,{b},{date}", f"{b},Calls,{a},{date}"] + ([f"{a},waves at,{b},{date}"] if day == 5 else [])
    (tmp_path / "other.csv").write_text("\n".join(rows) + "\n")
    other = load_dataset(tmp_path / "other.csv")
    run = model_config_for(other, tiny_run("extrapolation"))
    model, record = warm_start_model(first, other, run, torch.device("cpu"), "a.tpar")
    R_old, R_new = len(first.relations), other.num_relations
    for layer in range(2):
        old, new = first.weights[f"layers.{layer}.rel_emb.weight"], model.state_dict()[f"layers.{layer}.rel_emb.weight"]
        for data_name, model_name in (("MEETS", "meets"), ("Calls", "calls")):
            j, i = other.relations.id(data_name), first.relations.index(model_name)
            assert torch.equal(new[j], old[i]) and torch.equal(new[j + R_new], old[i + R_old])
        assert torch.equal(new[2 * R_new], old[2 * R_old])
        waves = other.relations.id("waves at")
        assert not any(torch.equal(new[waves], old[i]) for i in range(2 * R_old + 1))
    for k, v in model.state_dict().items():
        if "rel_emb" not in k:
            assert torch.equal(v, first.weights[k]), k
    assert record["other_data"] and record["data_name"] == first.data_name and "matched" in record["relations"]
    res = train(other, tiny_run("extrapolation", epochs=1), tmp_path / "ft.tpar", progress=False, init=first,
                init_name="a.tpar")
    assert res.checkpoint.extra["warm_start"]["other_data"] and res.checkpoint.data_fingerprint == other.fingerprint


def test_a_composite_model_is_refused_as_a_warm_start_with_a_message(world, tmp_path):
    """A composite's weights are its members' (``members.<i>.``): loading them into one model was a traceback."""
    from tpar.model.composite import CompositeCheckpoint
    from tpar.training.plan import model_config_for
    from tpar.training.trainer import warm_start_model

    kg = load_dataset(world)
    first = train(kg, tiny_run("extrapolation", epochs=1), tmp_path / "a.tpar", progress=False).checkpoint
    composite = CompositeCheckpoint.assemble([first], [1.0], None, setting=first.setting, selection={},
                                             member_names=["a.tpar"])
    with pytest.raises(DataError, match="composite"):
        warm_start_model(composite, kg, model_config_for(kg, tiny_run("extrapolation")), torch.device("cpu"))


def test_learning_rate_schedules():
    from tpar.training.schedule import scheduled_lr
    cfg = TrainConfig(lr=1e-2, epochs=4, lr_schedule="cosine")
    assert scheduled_lr(cfg, 0, 0, 10, []) == pytest.approx(1e-2)
    assert scheduled_lr(cfg, 2, 0, 10, []) == pytest.approx(1e-2 * 0.55)  # half-way
    assert scheduled_lr(cfg, 4, 0, 10, []) == pytest.approx(1e-3)  # the end: lr/10
    lrs = [scheduled_lr(cfg, e, b, 10, []) for e in range(4) for b in range(10)]
    assert all(a > b for a, b in zip(lrs, lrs[1:]))
    cfg = TrainConfig(lr=1e-2, lr_schedule="plateau")
    hist = [{"valid_mrr": m} for m in (0.3, 0.4, 0.35, 0.45, 0.44)]
    assert [scheduled_lr(cfg, 0, 0, 10, hist[:n]) for n in range(6)] == pytest.approx(
        [1e-2, 1e-2, 1e-2, 5e-3, 5e-3, 2.5e-3])
    assert scheduled_lr(TrainConfig(lr=1e-2), 3, 5, 10, hist) == 1e-2
    with pytest.raises(ValueError):
        TrainConfig(lr_schedule="linear")


def test_a_scheduled_run_uses_the_scheduled_rate(world, tmp_path):
    from tpar.training.schedule import scheduled_lr
    kg = load_dataset(world)
    seen = []
    run = tiny_run("extrapolation", epochs=2, lr_schedule="cosine")
    res = train(kg, run, tmp_path / "s.tpar", progress=False,
                callbacks=TrainingCallbacks(on_step=lambda info: seen.append(info) and False))
    assert res.stopped == "completed"
    assert [i.lr for i in seen] == [scheduled_lr(run.train, i.epoch, i.batch - 1, i.num_batches, res.history[:i.epoch])
                                    for i in seen]
    assert seen[0].lr == run.train.lr and seen[-1].lr < 0.2 * run.train.lr


def test_the_time_estimate_prices_every_phase_of_the_run(world):
    """Steps and validation per epoch, then the finish (calibration on valid; the test split when asked):
    the total a user is promised covers the whole job, not only the optimiser steps."""
    from tpar.training.estimate import estimate_training

    kg = load_dataset(world)
    run = tiny_run("unified", epochs=3)
    plain, with_test = estimate_training(kg, run), estimate_training(kg, run, eval_test=True)
    for est in (plain, with_test):
        assert est.questions_per_epoch > 0 and est.seconds_per_question > 0 and est.valid_seconds > 0
        assert est.total_seconds == pytest.approx(3 * est.epoch_seconds + est.finish_seconds)
    n_valid, n_test = 2 * len(kg.facts("valid")), 2 * len(kg.facts("test"))
    # an evaluation pass of one setting: what it pays once plus a price per answered question, both timed
    for est in (plain, with_test):
        assert est.seconds_per_answer > 0 and est.pass_overhead_seconds >= 0 and est.sample_questions > 0
        assert est.valid_seconds == pytest.approx(2 * (est.pass_overhead_seconds + est.seconds_per_answer * n_valid))
    # the finish at the same pace: calibration answers as many questions as validation here, then the test split
    assert plain.finish_seconds == pytest.approx(plain.valid_seconds, rel=1e-9)
    ov, per = with_test.pass_overhead_seconds, with_test.seconds_per_answer
    assert with_test.finish_seconds == pytest.approx(with_test.valid_seconds + 2 * (ov + per * n_test), rel=1e-9)
    no_calibration = RunConfig.from_dict({**run.to_dict(), "train": {**run.to_dict()["train"], "calibrate": False}})
    assert estimate_training(kg, no_calibration).finish_seconds == 0


def test_a_cancelled_run_is_marked_unfinished_wherever_it_is_listed(world, tmp_path):
    """Cancelled after a few steps of the first epoch: the checkpoint says how far it got and that it was
    never validated, the checkpoint list and the model card say UNFINISHED; a completed run says nothing."""
    from tpar.model.card import render
    from tpar.model.registry import find_checkpoints

    kg = load_dataset(world)
    out = tmp_path / "cut.tpar"
    res = train(kg, tiny_run("extrapolation", epochs=4), out, progress=False,
                callbacks=TrainingCallbacks(on_step=lambda info: info.batch == 2))
    assert res.stopped == "cancelled" and res.best_epoch == -1
    ck = Checkpoint.load(out)
    nb = len(kg.facts("train")) // 8 + 1  # batches of 8 questions (the last one smaller)
    assert 0 < ck.extra["epochs_trained"] <= 2 / (nb - 1)
    why = ck.unfinished()
    assert why.startswith(f"cancelled after {ck.extra['epochs_trained']:.2g} of 4 epochs")
    assert "never validated (best epoch -1)" in why
    assert "**Unfinished run:** cancelled after" in render(ck, "cut")
    done = train(kg, tiny_run("extrapolation", epochs=1), tmp_path / "done.tpar", progress=False).checkpoint
    assert done.unfinished() == "" and "Unfinished" not in render(done, "done")
    infos = {i.name: i for i in find_checkpoints([tmp_path])[0]}
    assert infos["cut"].summary().startswith("cut — UNFINISHED (") and infos["cut"].summary().endswith(": " + why)
    assert infos["done"].marker() == "" and "UNFINISHED" not in infos["done"].summary()


def test_an_existing_checkpoint_is_never_read_back_as_this_runs_model(world, tmp_path, capsys):
    """``tpar train --out`` onto an existing file is refused (nothing read, nothing written) without --replace; a
    replacing run cancelled before its first validation keeps the old model as it was (hostile audit 39 #2: a
    cancel had cost the user the model), never stamps the old weights with the new run's record, and its
    progress is in the resume file; an earlier never-validated attempt there is replaced by the new one."""
    kg = load_dataset(world)
    old = tmp_path / "old.tpar"
    train(kg, tiny_run("extrapolation", epochs=1, seed=1), old, progress=False)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    for target in (old, notes):
        before = target.read_bytes()
        assert main(["train", "--data", str(world), "--setting", "extrapolation", "--out", str(target), "--quiet",
                     "--epochs", "1"]) == 2
        err = capsys.readouterr().err
        assert "already there and is kept" in err and "--replace" in err and target.read_bytes() == before
    assert main(["ensemble", "--checkpoints", str(old), "--data", str(world), "--prior", "--out", str(notes)]) == 2
    assert "already there and is kept" in capsys.readouterr().err and notes.read_text() == "my notes\n"
    before = old.read_bytes()
    res = train(kg, tiny_run("extrapolation", epochs=3, seed=7), old, progress=False,
                callbacks=TrainingCallbacks(on_step=lambda info: info.batch == 1))
    assert res.stopped == "cancelled" and res.best_epoch == -1 and res.kept and res.checkpoint is None
    assert old.read_bytes() == before and (tmp_path / "old.tpar.resume").is_file()
    (tmp_path / "old.tpar.resume").unlink()
    attempt = tmp_path / "attempt.tpar"  # a cancelled, never-validated first attempt: the next attempt replaces it
    res = train(kg, tiny_run("extrapolation", epochs=3, seed=5), attempt, progress=False,
                callbacks=TrainingCallbacks(on_step=lambda info: info.batch == 1))
    assert not res.kept and Checkpoint.load(attempt).unfinished().startswith("cancelled")
    (tmp_path / "attempt.tpar.resume").unlink()
    old_weights = {k: v.clone() for k, v in Checkpoint.load(attempt).build_model().state_dict().items()}
    res = train(kg, tiny_run("extrapolation", epochs=3, seed=7), attempt, progress=False,
                callbacks=TrainingCallbacks(on_step=lambda info: info.batch == 1))
    assert not res.kept and res.stopped == "cancelled"
    ck = Checkpoint.load(attempt)
    assert ck.config.train.seed == 7 and ck.config.train.epochs == 3 and ck.metrics == {}
    new = ck.build_model().state_dict()
    assert any(not torch.equal(new[k], old_weights[k]) for k in old_weights)


def test_an_interrupted_runs_progress_is_never_overwritten_unasked(world, tmp_path, capsys):
    """A run killed in its first epoch leaves NAME.tpar.resume and no NAME.tpar: the same command again without
    --resume overwrote that progress and then deleted it (hostile audit). Now it is refused, naming --resume and
    --replace; --resume and --replace together are refused as a contradiction; the app's job refuses likewise."""
    from tpar.runtime.jobs import JobSpec, start_job

    out = tmp_path / "e.tpar"
    progress = tmp_path / "e.tpar.resume"
    progress.write_bytes(b"an interrupted run's progress")
    cmd = ["train", "--data", str(world), "--setting", "extrapolation", "--out", str(out), "--quiet", "--epochs", "1"]
    assert main(cmd) == 2
    err = capsys.readouterr().err
    assert "e.tpar.resume" in err and "--resume" in err and "--replace" in err
    assert progress.read_bytes() == b"an interrupted run's progress" and not out.exists()
    assert main(cmd + ["--resume", "--replace"]) == 2 and "give one of them" in capsys.readouterr().err
    with pytest.raises(DataError, match="left its progress in e.tpar.resume"):
        start_job(tmp_path / "jobs", JobSpec(data=str(world), setting="extrapolation", run=tiny_run("extrapolation").to_dict(),
                                             out=str(out), name="e"))
    assert progress.read_bytes() == b"an interrupted run's progress"
    assert main(cmd + ["--replace"]) == 0 and out.exists() and not progress.exists()  # asked: a fresh run


def test_a_run_still_training_is_said_to_be_in_use_not_to_have_left_progress(world, tmp_path, capsys):
    """Hostile audit 36: while run A trains (its periodic resume file on disk), a second `tpar train --out` the same
    file was told "an interrupted run left its progress ... add --resume", and --resume then said "in use by
    another process". The output's lock is taken first, so the second run hears that it is in use."""
    import subprocess
    import sys

    from tpar.data.locks import lock_path

    out = tmp_path / "e.tpar"
    (tmp_path / "e.tpar.resume").write_bytes(b"a running run's progress")
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock_path(out).write_text(str(holder.pid))  # as the running `tpar train --out e.tpar` holds it
        cmd = ["train", "--data", str(world), "--setting", "extrapolation", "--out", str(out), "--quiet", "--epochs", "1"]
        for extra in ([], ["--resume"]):
            assert main(cmd + extra) == 2
            err = capsys.readouterr().err
            assert "checkpoint e.tpar is in use by another process" in err and "interrupted" not in err, err
    finally:
        holder.kill()


def test_a_warm_start_refuses_to_add_or_drop_a_learned_priority(world):
    """The propagation may change in a warm start, but a learned priority's weights exist only with top-K: turning
    top-K on or off under ``priority="learned"`` would leave weights with no home (or none to start from), so it is
    refused as a configuration change (a DataError naming it), not a failed ``load_state_dict``."""
    from dataclasses import replace

    from tpar.model.checkpoint import from_model
    from tpar.model.network import TPAR
    from tpar.training.trainer import warm_start_model

    kg = load_dataset(world)
    run = tiny_run("interpolation")
    run.model = replace(run.model.with_exact_propagation(), num_relations=kg.num_relations, top_k=4,
                        priority="learned")
    learned = from_model(TPAR(run.model), run, kg, "interpolation")
    for top_k in (0, 3):  # off: the learned priority's weights have no home; another K: fine
        other = replace(run, model=replace(run.model, top_k=top_k))
        if top_k:
            warm_start_model(learned, kg, other, torch.device("cpu"))
        else:
            with pytest.raises(DataError, match="top_k 4 there, 0 here"):
                warm_start_model(learned, kg, other, torch.device("cpu"))
    # and the reverse: no learned priority there (top-K off), one here
    off = replace(run, model=replace(run.model, top_k=0))
    with pytest.raises(DataError, match="top_k 0 there, 4 here"):
        warm_start_model(from_model(TPAR(off.model), off, kg, "interpolation"), kg, run, torch.device("cpu"))


def test_a_resume_file_altered_field_by_field_is_refused_by_name(world, tmp_path):
    """Each part of a resume file a run reads -- its position, its optimiser moments, its RNG state -- is checked
    when it is read: a null best MRR, a negative epoch, a moment of another shape or a torch RNG of another size
    end in a message naming the file, not an internal error after the data is loaded."""
    from tpar.training.snapshots import load_resume, restore_optimizer

    kg = load_dataset(world)
    out = tmp_path / "r.tpar"
    steps = []
    res = train(kg, tiny_run("extrapolation", epochs=2), out, progress=False,
                callbacks=TrainingCallbacks(on_step=lambda info: steps.append(info) or len(steps) == 2))
    assert res.stopped == "cancelled"
    snap = resume_path(out)
    good = torch.load(snap, weights_only=True)

    def altered(edit) -> Path:
        payload = torch.load(snap, weights_only=True)
        edit(payload)
        bad = tmp_path / "bad.tpar.resume"
        torch.save(payload, bad)
        return bad

    def position(**kw):
        return lambda p: p.__setitem__("position", json.dumps({**json.loads(good["position"]), **kw}))

    for edit, says in [
        (position(best_mrr=None), "best_mrr is 'None'"),
        (position(epoch=-5), "epoch is '-5'"),
        (position(seconds=float("nan")), "seconds is 'nan'"),
        (position(loss_steps=99), "loss_steps is '99', not a whole number from 0 to its batch"),
        (position(loss_sum=-1.0), "loss_sum is '-1.0', not a finite loss"),
        (position(loss_steps=0, loss_sum=3790.1), "loss_sum is '3790.1', not a finite loss of its 0 steps"),
        (position(loss_sum=1e308), r"loss_sum is '1e\+308', not a finite loss of its 2 steps"),
        (position(epoch_seconds=1e300), r"epoch_seconds is '1e\+300', not a duration"),
        (position(epoch_seconds="x"), "epoch_seconds is 'x', not a duration"),
        (lambda p: p.__setitem__("position", "[" * 100_000), "position is not readable"),
        (lambda p: p["optimizer"].__setitem__("torch_rng", torch.zeros(3, dtype=torch.uint8)), "random-number state"),
        (lambda p: p.__setitem__("optimizer", None), "holds no optimiser state"),
    ]:
        with pytest.raises(DataError, match=says) as e:
            load_resume(altered(edit), kg, 3)
        assert "bad.tpar.resume" in str(e.value)
    # the optimiser's moments must fit the model they resume
    ck, opt_state, _ = load_resume(snap, kg, 3)
    model = ck.build_model()
    key = next(iter(opt_state["adam"]["state"]))
    opt_state["adam"]["state"][key]["exp_avg"] = torch.zeros(7)
    with pytest.raises(DataError, match="optimiser state 'exp_avg' does not fit a weight of shape"):
        restore_optimizer(torch.optim.Adam(model.parameters()), opt_state["adam"], snap)
    opt_state["adam"]["param_groups"] = []
    with pytest.raises(DataError, match="optimiser state does not fit the model"):
        restore_optimizer(torch.optim.Adam(model.parameters()), opt_state["adam"], snap)
    for option, value in (("amsgrad", True), ("betas", [5, -1]), ("capturable", True), ("weight_decay", "0"),
                          ("lr", float("nan")), ("maximize", True), ("eps", 0.0)):
        state = load_resume(snap, kg, 3)[1]["adam"]
        state["param_groups"][0][option] = value
        with pytest.raises(DataError, match="optimiser options are not Adam's as tpar trains"):
            restore_optimizer(torch.optim.Adam(model.parameters()), state, snap)
    state = load_resume(snap, kg, 3)[1]["adam"]
    key = next(iter(state["state"]))
    state["state"][key]["exp_avg_sq"] = -state["state"][key]["exp_avg_sq"].abs() - 1
    with pytest.raises(DataError, match="'exp_avg_sq' does not fit"):
        restore_optimizer(torch.optim.Adam(model.parameters()), state, snap)


@pytest.mark.parametrize("epochs, stopped, ran", [(1, "completed", 1), (3, "early-stopping", 1)])
def test_a_run_whose_patience_ends_with_its_last_epoch_ran_every_epoch(world, tmp_path, monkeypatch, epochs, stopped, ran):
    """Walk-through 36 F5: a run that reached its epoch limit was said to have stopped early (its patience ran out
    in the same epoch), and advised more epochs. Early stopping is said only when epochs were left to run."""
    from tpar.training.stopping import EarlyStopping
    from tpar.training.trainer import STOPPED_TEXT

    monkeypatch.setattr(EarlyStopping, "should_stop", property(lambda self: True))  # patience out after every epoch
    res = train(load_dataset(world), tiny_run("extrapolation", epochs=epochs), tmp_path / "m.tpar", progress=False)
    assert res.stopped == stopped and len(res.history) == ran
    assert STOPPED_TEXT[res.stopped] in ("every epoch ran, up to the epoch limit", "stopped early: valid MRR stopped improving")


def _index_facts(bg) -> set[tuple[int, int, int, int]]:
    """The facts a training background holds, from its index's forward links (relation < R)."""
    ix = bg.index
    fwd = ix.rel < ix.num_relations
    return set(zip(ix.src[fwd].tolist(), ix.rel[fwd].tolist(), ix.dst[fwd].tolist(), ix.time[fwd].tolist()))


def test_training_questions_see_training_facts_only_and_never_their_own(world):
    """Fidelity review 39 F3: the split discipline of training (paper Appendix D.1) had no test. On data split at
    random (valid and test facts lie between training facts in time), an extrapolation run's history is the
    training facts only; an interpolation epoch splits train into a background and the questions, disjoint
    and together all of train, each question asked both ways."""
    from tpar.training.plan import EpochPlan, extrapolation_background

    kg = load_dataset(world, split_policy="random", seed=3)
    facts = {s: {tuple(map(int, f)) for f in kg.facts(s)} for s in ("train", "valid", "test")}
    assert facts["valid"] and facts["test"]
    assert max(t for *_, t in facts["valid"] | facts["test"]) > min(t for *_, t in facts["train"])  # interleaved
    run = tiny_run("unified")
    ex_bg = extrapolation_background(kg, "unified")
    assert _index_facts(ex_bg) == facts["train"]
    for epoch in (0, 1):
        plan = EpochPlan(kg, run, epoch, ex_bg)
        assert plan.backgrounds["extrapolation"] is ex_bg
        bg = _index_facts(plan.backgrounds["interpolation"])
        q = plan.queries["interpolation"]
        R = kg.num_relations
        asked = {(int(s), int(r), int(a), int(t)) if r < R else (int(a), int(r) - R, int(s), int(t))
                 for s, r, a, t in zip(q.subject, q.relation, q.answer, q.time)}
        assert not bg & asked and bg | asked == facts["train"], "the background and the questions must split train"
        assert len(q) == 2 * len(asked)  # both directions of each question's fact
        assert abs(len(bg) - round(run.train.background_fraction * len(facts["train"]))) <= 1
        eq = plan.queries["extrapolation"]
        assert {(int(s), int(r), int(a), int(t)) for s, r, a, t in zip(eq.subject, eq.relation, eq.answer, eq.time)
                if r < R} <= facts["train"]
