"""Checkpoint files altered by a careful tamperer (every digest recomputed): numbers no float holds, a setting
this code never writes, a null calibration. Each is refused by name or set aside with a note -- never a
traceback in the CLI, and one such file never hides the other models from the app's listing."""

from __future__ import annotations

import shutil

import pytest

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
    assert len(problems) == 1 and "odd.tpar" in problems[0] and "OverflowError" in problems[0]
