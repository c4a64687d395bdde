"""The progress contract: library steps, rendered as bars only by the command line."""

from burstlake.cli.bars import rendered
from burstlake.progress import Step, silent


def test_steps_render_one_bar_per_task(capsys):
    with rendered(True) as report:
        report(Step("ingest slurm", 4, total=10, unit="B", note="edison"))
        report(Step("ingest slurm", 6))
        report(Step("metrics", 1, total=2, done=True))
    err = capsys.readouterr().err
    assert "ingest slurm" in err and "10.0/10.0" in err and "edison" in err
    assert "metrics" in err and "1.00/2.00" in err


def test_hidden_report_is_silent(capsys):
    with rendered(False) as report:
        assert report is silent
        report(Step("x", 1))
    assert capsys.readouterr().err == ""
