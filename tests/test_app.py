"""The Streamlit front end starts and shows a data set's statistics (AppTest, no browser)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

APP = str(Path(__file__).resolve().parent.parent / "app" / "streamlit_app.py")


def test_app_shows_statistics(tmp_path, monkeypatch):
    d = tmp_path / "data" / "user" / "toy"
    d.mkdir(parents=True)
    (d / "train.csv").write_text("subject,relation,object,time\nAnn,meets,Bob,2024-01-01\nBob,calls,Cid,2024-01-02\n")
    (d / "test.csv").write_text("subject,relation,object,time\nAnn,meets,Cid,2024-01-03\n")
    monkeypatch.setenv("TPAR_DATA_DIR", str(tmp_path / "data"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert "benchmark: user/toy" in at.selectbox[0].options
    at.selectbox[0].select("benchmark: user/toy").run()
    assert not at.exception
    assert [m.value for m in at.metric][:2] == ["3", "2"]
    assert any("valid split is not available" in w.value for w in at.warning)
