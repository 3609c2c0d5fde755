"""Checkpoint files altered by a careful tamperer (every digest recomputed): numbers no float holds, a setting
this code never writes, a null calibration. Each is refused by name or set aside with a note -- never a
traceback in the CLI, and one such file never hides the other models from the app's listing."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import torch

from helpers import SAMPLE_CHECKPOINT, SAMPLE_WORLD, rewrite_checkpoint
from tpar.cli import main
from tpar.errors import DataError
from tpar.model.checkpoint import Checkpoint

QUESTION = ["--subject", "Orora Front", "--relation", "Mobilize against", "--time", "2025-12-20"]


@pytest.mark.parametrize("edit,why", [
    (lambda m: m["metrics"].__setitem__("seconds", 10 ** 400), "metrics.seconds is an integer of"),
    (lambda m: m["extra"].__setitem__("seconds", -(10 ** 400)), "extra.seconds is an integer of"),
    (lambda m: m.__setitem__("setting", "bogus"), "setting 'bogus' is not one of extrapolation, interpolation"),
])
def test_a_tampered_single_checkpoint_is_refused_by_name_in_the_cli(tmp_path, capsys, edit, why):
    bad = rewrite_checkpoint(tmp_path / "bad.tpar", edit)
    with pytest.raises(DataError, match=why):
        Checkpoint.load(bad)
    assert main(["predict", "--checkpoint", str(bad), "--data", str(SAMPLE_WORLD), *QUESTION]) == 2
    err = capsys.readouterr().err
    assert "bad.tpar" in err and why in err and "Traceback" not in err and "bug" not in err


def test_a_null_calibration_answers_uncalibrated_and_says_so(tmp_path, capsys):
    bad = rewrite_checkpoint(tmp_path / "nocal.tpar", lambda m: m["extra"].__setitem__("calibration", None))
    ck = Checkpoint.load(bad)
    assert "calibration" not in ck.extra and any("calibration" in n for n in ck.load_notes)
    assert main(["predict", "--checkpoint", str(bad), "--data", str(SAMPLE_WORLD), *QUESTION,
                 "--setting", "extrapolation", "--top", "3"]) == 0
    assert main(["evaluate", "--checkpoint", str(bad), "--data", str(SAMPLE_WORLD), "--split", "test",
                 "--setting", "extrapolation", "--max-queries", "50", "--quiet", "--threads", "1"]) == 0


def test_one_file_that_fails_unexpectedly_never_hides_the_others(tmp_path, monkeypatch):
    from tpar.model import registry

    shutil.copy(SAMPLE_CHECKPOINT, tmp_path / "good.tpar")
    shutil.copy(SAMPLE_CHECKPOINT, tmp_path / "odd.tpar")
    real = Checkpoint.load

    def load(path, **kw):
        if str(path).endswith("odd.tpar"):
            raise OverflowError("int too large to convert to float")
        return real(path, **kw)
    monkeypatch.setattr(registry.Checkpoint, "load", load)
    infos, problems = registry.find_checkpoints([tmp_path])
    assert [i.name for i in infos] == ["good"]
    assert len(problems) == 1 and problems[0].name == "odd"
    assert "odd.tpar" in problems[0].text and "OverflowError" in problems[0].text


def _refused_everywhere(bad, capsys, *words) -> None:
    """``bad`` is refused by :meth:`Checkpoint.load` and by the CLI, naming the file and each of ``words``."""
    with pytest.raises(DataError) as e:
        Checkpoint.load(bad)
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    assert main(["info", str(SAMPLE_WORLD)]) == 0
    capsys.readouterr()
    assert main(["predict", "--checkpoint", str(bad), "--data", str(SAMPLE_WORLD), *QUESTION]) == 2
    err = capsys.readouterr().err
    assert bad.name in err and "Traceback" not in err and "bug" not in err, err


def test_a_weight_that_declares_more_elements_than_it_stores_is_refused_before_hashing(tmp_path, capsys):
    """A stride-0 expanded view: a few bytes on disk declaring 10^10 elements; hashing it contiguously would
    allocate 40 GB. Refused before any copy (this test would run out of memory otherwise)."""
    def expand(payload):
        payload["weights"]["score.weight"] = torch.zeros(1, 1).expand(100_000, 100_000)

    bad = tmp_path / "expanded.tpar"
    payload = torch.load(SAMPLE_CHECKPOINT, weights_only=True)
    expand(payload)
    torch.save(payload, bad)  # the digest is not recomputed: computing it is what must not happen
    _refused_everywhere(bad, capsys, "declares 10,000,000,000 elements", "expanded or strided view")


def test_integer_and_misshapen_weights_are_refused_at_load_naming_the_weight(tmp_path, capsys):
    def to_int(payload):
        payload["weights"]["layers.0.W.weight"] = payload["weights"]["layers.0.W.weight"].to(torch.int64)

    def reshape(payload):  # same element count, another shape: the config's own size checks pass
        w = payload["weights"]["layers.1.W.weight"]
        payload["weights"]["layers.1.W.weight"] = w.reshape(w.shape[1] * 2, w.shape[0] // 2).contiguous()

    def extra(payload):
        payload["weights"]["stowaway.weight"] = torch.zeros(2, 2)

    for name, edit, words in (("int.tpar", to_int, ("'layers.0.W.weight'", "torch.int64")),
                              ("shape.tpar", reshape, ("layers.1.W.weight is",)),
                              ("extra.tpar", extra, ("unexpected stowaway.weight",))):
        bad = rewrite_checkpoint(tmp_path / name, edit_payload=edit)
        _refused_everywhere(bad, capsys, *words)


def test_a_folder_or_a_fifo_given_as_a_checkpoint_is_named_as_such(tmp_path, capsys):
    import os

    (tmp_path / "dir.tpar").mkdir()
    os.mkfifo(tmp_path / "pipe.tpar")
    (tmp_path / "zero.tpar").symlink_to("/dev/zero")
    (tmp_path / "dangling.tpar").symlink_to(tmp_path / "gone.tpar")
    for name, words in (("dir.tpar", "is a folder"), ("pipe.tpar", "is a pipe, not a regular checkpoint file"),
                        ("zero.tpar", "is a device"), ("dangling.tpar", "is a symbolic link to nothing")):
        with pytest.raises(DataError, match=words):
            Checkpoint.load(tmp_path / name)
    with pytest.raises(DataError, match="not found"):
        Checkpoint.load(tmp_path / "nothing.tpar")


def test_a_composite_whose_two_members_are_one_model_is_refused(sample_composite, tmp_path):
    import json

    from tpar.model import checkpoint as ckmod

    payload = torch.load(sample_composite, weights_only=True)
    meta = json.loads(payload["meta"])
    meta["members"][1] = meta["members"][0]
    w = payload["weights"]
    for k in [k for k in w if k.startswith("members.1.")]:
        w[k] = w["members.0." + k[len("members.1."):]].clone()
    meta["sha256"] = ckmod.content_digest(meta, w)
    payload["meta"] = json.dumps(meta)
    torch.save(payload, tmp_path / "twins.tpar")
    with pytest.raises(DataError, match="model 2 holds the same weights as model 1"):
        Checkpoint.load(tmp_path / "twins.tpar")
    # the same weights under other metadata (another seed recorded, its own sha256): still one model twice, as
    # tpar ensemble refuses it (review 39b: the loader compared whole-content digests only)
    member = json.loads(json.dumps(meta["members"][0]))
    member.setdefault("extra", {})["seed"] = 12345
    own = {k[len("members.1."):]: v for k, v in w.items() if k.startswith("members.1.")}
    member["sha256"] = ckmod.content_digest(member, own)
    assert member["sha256"] != meta["members"][0]["sha256"]
    meta["members"][1] = member
    meta["sha256"] = ckmod.content_digest(meta, w)
    payload["meta"] = json.dumps(meta)
    torch.save(payload, tmp_path / "twins2.tpar")
    with pytest.raises(DataError, match="model 2 holds the same weights as model 1"):
        Checkpoint.load(tmp_path / "twins2.tpar")


def test_names_from_a_checkpoint_reach_the_terminal_as_text_not_escape_sequences(tmp_path, capsys):
    """A data name holding a terminal escape (recolour, set the title) and a direction override is printed with
    both made visible (the answer says which data the model was trained on); tabs, newlines and a progress bar's
    carriage return are kept."""
    evil = "world\x1b]0;owned\x07\x1b[31m\u202egnp.exe"
    bad = rewrite_checkpoint(tmp_path / "evil.tpar", lambda m: m.__setitem__("data_name", evil))
    assert main(["predict", "--checkpoint", str(bad), "--data", str(SAMPLE_WORLD), *QUESTION, "--top", "2"]) == 0
    text = capsys.readouterr()
    both = text.out + text.err
    assert "\x1b]0;" not in both and "\x1b[31m" not in both and "\u202e" not in both
    assert "\\x1b]0;owned\\x07\\x1b[31m\\u202egnp.exe" in both
    from tpar.runtime.terminal import printable

    assert printable("\r50%|#####") == "\r50%|#####" and printable("a\tb\n") == "a\tb\n"
    # a line break in the data's name would print lines of its own (hostile audit): such a checkpoint is refused
    broken = rewrite_checkpoint(tmp_path / "lines.tpar", lambda m: m.__setitem__("data_name", "evil\nall verified"))
    assert main(["predict", "--checkpoint", str(broken), "--data", str(SAMPLE_WORLD), *QUESTION]) == 2
    assert "holds a line break" in capsys.readouterr().err
    # cursor movement and a carriage return inside text could rewrite lines already shown
    assert printable("m.tpar\x1b[A\x1b[A\rall rules verified") == "m.tpar\\x1b[A\\x1b[A\\rall rules verified"


def test_a_checkpoint_whose_scores_overflow_is_refused_when_asked_not_ranked_as_nan(tmp_path, capsys):
    def huge(payload):
        payload["weights"]["score.weight"] = torch.full_like(payload["weights"]["score.weight"], 3e38)

    bad = rewrite_checkpoint(tmp_path / "huge.tpar", edit_payload=huge)
    for argv in (["predict", *QUESTION], ["evaluate", "--max-queries", "10", "--setting", "extrapolation",
                                          "--quiet"]):
        assert main([argv[0], "--checkpoint", str(bad), "--data", str(SAMPLE_WORLD), *argv[1:]]) == 2
        err = capsys.readouterr().err
        assert "scores are not finite" in err and "bug" not in err, err


def test_an_archive_of_very_many_entries_is_refused_before_they_are_listed(tmp_path, capsys, monkeypatch):
    """zipfile builds an object per entry before anything counts them (300,000 empty entries cost 400 MB): the count
    is read from the archive's end record first."""
    import shutil
    import zipfile

    from tpar.model import checkpoint

    forged = tmp_path / "many.tpar"
    shutil.copy(SAMPLE_CHECKPOINT, forged)
    assert checkpoint.archive_directory(forged)[0] == len(zipfile.ZipFile(forged).infolist())
    with zipfile.ZipFile(forged, "a") as z:
        for i in range(50):
            z.writestr(f"x/{i}", b"")
    monkeypatch.setattr(checkpoint, "MAX_ARCHIVE_ENTRIES", 60)
    listed = []
    monkeypatch.setattr(zipfile.ZipFile, "infolist", lambda self: listed.append(1) or [])
    with pytest.raises(DataError, match=r"the archive lists \d+ entries"):
        checkpoint.read_payload(forged)
    assert not listed  # refused before zipfile listed them


def test_an_archive_whose_directory_is_larger_than_its_count_says_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """Hostile audit 36: zipfile reads directory records until it has read the size the end record declares,
    whatever count it declares (one entry declared, 10.9 million stored: 4.9 GB to refuse a 534 MB file); the
    declared size is bounded too, and a record count hidden behind it never reaches zipfile."""
    import zipfile

    from tpar.model import checkpoint

    forged = tmp_path / "liar.tpar"
    with zipfile.ZipFile(forged, "w") as z:
        for i in range(300):
            z.writestr(f"a/{i}", b"")
    raw = bytearray(forged.read_bytes())
    at = raw.rfind(b"PK\x05\x06")
    raw[at + 8:at + 12] = (1).to_bytes(2, "little") * 2  # "1 entry" on this disk and in all
    forged.write_bytes(bytes(raw))
    count, size = checkpoint.archive_directory(forged)
    assert count == 1 and size > 300 * 46
    assert len(zipfile.ZipFile(forged).infolist()) == 300  # zipfile reads them all: the count is no bound
    monkeypatch.setattr(checkpoint, "MAX_DIRECTORY_BYTES", 300 * 46)
    listed = []
    monkeypatch.setattr(zipfile.ZipFile, "infolist", lambda self: listed.append(1) or [])
    with pytest.raises(DataError, match=r"liar.tpar: refused: the archive's list of entries takes [\d,]+ bytes"):
        checkpoint.read_payload(forged)
    assert not listed


@pytest.mark.parametrize("extra, said", [
    ({"baseline_test": {"extrapolation": 5}}, "extra.baseline_test must map each setting to an object"),
    ({"baseline_test": "x"}, "extra.baseline_test must map each setting to an object"),
    ({"baseline_test": [1, 2]}, "extra.baseline_test must map each setting to an object"),
    ({"seconds": "x"}, "extra.seconds is 'x', not a number"), ({"seconds": [1]}, "extra.seconds is '[1]', not a number"),
    ({"seconds": {}}, "extra.seconds is '{}', not a number"), ({"seconds": None}, "extra.seconds is 'None', not a number"),
    ({"entities": "many"}, "extra.entities is 'many', not a number"),
], ids=["baseline-int", "baseline-str", "baseline-list", "seconds-str", "seconds-list", "seconds-dict", "seconds-null",
        "entities-str"])
def test_a_checkpoints_figures_of_the_wrong_type_are_refused_naming_the_file_not_a_bug(tmp_path, capsys, extra, said):
    """Hostile audit 36 #7: the card read extra["baseline_test"][setting]["mrr"] and formatted extra["seconds"]
    with :.0f; a forged file with an int, a string, a list or null there loaded, and Data and model then showed
    "internal error … This is a bug". The loader refuses it with the file named, as it does out-of-range figures."""
    from tpar.model.checkpoint import Checkpoint

    ck = Checkpoint.load(SAMPLE_CHECKPOINT)
    ck.extra = {**ck.extra, **extra}
    forged = tmp_path / "forged.tpar"
    ck.save(forged)
    with pytest.raises(DataError, match=re.escape(said)):
        Checkpoint.load(forged)
    assert main(["predict", "--checkpoint", str(forged), "--data", str(SAMPLE_WORLD), *QUESTION]) == 2
    err = capsys.readouterr().err
    assert "forged.tpar" in err and said in err and "bug" not in err


def test_a_listing_reads_each_unchanged_file_once_and_a_rewritten_one_again(tmp_path, monkeypatch):
    """The app lists the models every few seconds: an unchanged file is not read and verified again (six large
    models cost 24 s a page view: audit 38 #2), a rewritten or deleted one is noticed."""
    from tpar.model import registry

    shutil.copy(SAMPLE_CHECKPOINT, tmp_path / "a.tpar")
    (tmp_path / "b.tpar").write_bytes(b"not a checkpoint")
    real, calls = Checkpoint.load, []

    def load(path, **kw):
        calls.append(Path(path).name)
        return real(path, **kw)
    monkeypatch.setattr(registry.Checkpoint, "load", load)
    first = registry.find_checkpoints([tmp_path])
    second = registry.find_checkpoints([tmp_path])
    assert sorted(calls) == ["a.tpar", "b.tpar"]  # once each, the refused file too
    assert [i.name for i in second[0]] == ["a"] and second[0][0].checkpoint is first[0][0].checkpoint
    assert [p.name for p in second[1]] == ["b"] and "b.tpar" in second[1][0].text
    shutil.copy(SAMPLE_CHECKPOINT, tmp_path / "b.tpar")  # mended: read again, and now listed
    assert [i.name for i in registry.find_checkpoints([tmp_path])[0]] == ["a", "b"] and calls[-1] == "b.tpar"
    (tmp_path / "a.tpar").unlink()
    assert [i.name for i in registry.find_checkpoints([tmp_path])[0]] == ["b"]
    assert (tmp_path / "a.tpar").absolute() not in registry._LISTED  # a deleted model is not held on to


def test_a_listing_tries_again_after_an_os_error_and_names_a_link_to_nothing(tmp_path, monkeypatch):
    """Only verdicts on a file's bytes are kept: a permission or I/O error is tried again at the next listing (chmod
    changes no content), and a dangling link is named as such, not as 'not readable' (review 38)."""
    from tpar.model import registry

    shutil.copy(SAMPLE_CHECKPOINT, tmp_path / "m.tpar")
    (tmp_path / "dangling.tpar").symlink_to(tmp_path / "gone.tpar")
    real, denied = Checkpoint.load, [True]

    def load(path, **kw):
        if Path(path).name == "m.tpar" and denied[0]:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, **kw)
    monkeypatch.setattr(registry.Checkpoint, "load", load)
    infos, problems = registry.find_checkpoints([tmp_path])
    said = {p.name: p.text for p in problems}
    assert not infos and "not readable (Permission denied)" in said["m"] and "bug" not in said["m"]
    assert "symbolic link to nothing" in said["dangling"], said
    denied[0] = False  # the permissions mended: listed at once, no restart
    assert [i.name for i in registry.find_checkpoints([tmp_path])[0]] == ["m"]
    shutil.rmtree(tmp_path)  # the folder itself gone: its models are let go
    registry.find_checkpoints([tmp_path])
    assert not any(k.parent == tmp_path.absolute() for k in registry._LISTED)


def test_a_listing_holds_its_models_metadata_not_their_weights(tmp_path, sample_composite, monkeypatch):
    """Six 387 MB models listed took 2.7 GB (audit 38 #2): a listed checkpoint keeps its weights in the file and
    reads them, verified again, when a model is built from it; a file changed since it was listed is refused by
    name, never built with weights the listing did not verify."""
    from tpar.model import registry
    from tpar.model.checkpoint import WeightsOnDisk

    shutil.copy(SAMPLE_CHECKPOINT, tmp_path / "single.tpar")
    shutil.copy(sample_composite, tmp_path / "composite.tpar")
    infos, problems = registry.find_checkpoints([tmp_path])
    assert not problems and [i.name for i in infos] == ["composite", "single"]
    for info in infos:
        ck, direct = info.checkpoint, Checkpoint.load(info.path)
        held = [ck, *ck.member_checkpoints]
        assert all(isinstance(m.weights, WeightsOnDisk) for m in held)
        assert not any(isinstance(v, torch.Tensor) for m in held for v in vars(m).values())
        assert sorted(ck.weights) == sorted(direct.weights)  # names known without reading
        real, reads = Checkpoint.load, []
        monkeypatch.setattr(Checkpoint, "load", classmethod(lambda cls, p, **kw: reads.append(p) or real(p, **kw)))
        built = ck.build_model().state_dict()
        if ck.kind == "composite":
            assert ck.formula() == direct.formula()
        monkeypatch.undo()
        assert len(reads) == 1  # one read of the file builds every member (review 39 #1: a composite's K members read it K times)
        want = direct.build_model().state_dict()
        assert built.keys() == want.keys() and all(torch.equal(built[k], want[k]) for k in want)
    single = next(i for i in infos if i.name == "single").checkpoint
    shutil.copy(sample_composite, tmp_path / "other.tpar")
    (tmp_path / "other.tpar").replace(tmp_path / "single.tpar")  # replaced after the listing, not listed again
    with pytest.raises(DataError, match="changed since it was listed") as e:
        single.build_model()
    assert "single.tpar" in str(e.value)
    again = registry.listed_checkpoint(tmp_path / "single.tpar")  # listed again: the new file's model
    assert again.kind == "composite" and again.build_model() is not None
