"""burstlake.yaml: the deployment file the CLI and the DAGs read (burstlake/config.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from burstlake import config
from burstlake.cli import main
from burstlake.lake import read_table
from tests.builders.paths import FIXTURES as TESTS_FIXTURES

FIXTURES = TESTS_FIXTURES / "zabbix"

GOOD = """
machines:
  edison:
    sources:
      slurm: {tz: America/Los_Angeles}
      zabbix: {host-prefix: [nid=cn], gap_factor: 4, mapping: mapping.yaml}
  tiny: {}
drops:
  - {path: drop/edison/zabbix, source: zabbix, machine: edison, options: {interval: 30}}
  - {path: drop/any, source: topology}
zabbix_db:
  edison: {url: "postgresql://zabbix@db:5432/zabbix", password_env: ZBX_PASSWORD}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "burstlake.yaml"
    path.write_text(text)
    (tmp_path / "mapping.yaml").write_text((FIXTURES / "mapping-rates.yaml").read_text())
    return path


def test_a_two_machine_file_is_read(tmp_path: Path) -> None:
    deployment = config.load(_write(tmp_path, GOOD))
    assert deployment.options("zabbix", "edison") == {
        "host_prefix": ["nid=cn"],
        "gap_factor": 4.0,
        "mapping": str(tmp_path / "mapping.yaml"),
        "cluster": "edison",
    }
    assert deployment.options("slurm", "tiny") == {"cluster": "tiny"}
    assert deployment.options("slurm", None) == {}
    first, second = deployment.drops
    assert (first.path, first.machine) == (tmp_path / "drop/edison/zabbix", "edison")
    assert deployment.drop_options(first)["interval"] == 30
    assert deployment.drop_options(first)["cluster"] == "edison"
    assert (second.machine, deployment.drop_options(second)) == (None, {})
    (db,) = deployment.databases
    assert (db.machine, db.password_env) == ("edison", "ZBX_PASSWORD")


@pytest.mark.parametrize(
    "text, message",
    [
        ("machine: {}\n", "machine: unknown key; expected one of machines, drops, zabbix_db"),
        ("machines: [a, b]\n", "machines: must be a mapping, not list"),
        ("machines: {'a/b': {}}\n", "machines.a/b: machine name 'a/b': '/' is not allowed"),
        ("machines: {m: {sources: {lustre: {}}}}\n", "machines.m.sources.lustre: unknown source"),
        (
            "machines: {m: {sources: {zabbix: {intervall: 10}}}}\n",
            "machines.m.sources.zabbix.intervall: not an option of zabbix",
        ),
        (
            "machines: {m: {sources: {zabbix: {interval: ten}}}}\n",
            "machines.m.sources.zabbix.interval: 'ten' is not a valid value",
        ),
        (
            "machines: {m: {sources: {zabbix: {interval: 0}}}}\n",
            "machines.m.sources.zabbix.interval: --interval must be 1..86400 seconds (a day)",
        ),
        (
            "machines: {m: {sources: {slurm: {tz: Mars/Olympus}}}}\n",
            "machines.m.sources.slurm: unknown time zone 'Mars/Olympus'",
        ),
        ("drops: [{source: zabbix}]\n", "drops[0].path: required (text)"),
        ("drops: [{path: d, source: zabbix, machine: x}]\n", "drops[0].machine: machine 'x'"),
        ("drops: {path: d}\n", "drops: must be a list, not dict"),
        (
            "machines: {m: {}}\nzabbix_db: {m: {url: 'postgresql://u:secret@h/z'}}\n",
            "zabbix_db.m.url: holds a password",
        ),
        ("zabbix_db: {m: {url: x}}\n", "zabbix_db.m: machine 'm' is not under machines"),
        ("machines: {m: {}\n", "line 2: not valid YAML"),
    ],
)
def test_each_mistake_is_one_line_naming_file_and_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(config.ConfigError) as caught:
        config.load(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_where_the_file_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()
    assert config.config_path(None, lake) is None
    (lake / "burstlake.yaml").write_text("machines: {m: {}}\n")
    assert config.config_path(None, lake) == lake / "burstlake.yaml"
    other = _write(tmp_path, "machines: {n: {}}\n")
    monkeypatch.setenv("BURSTLAKE_CONFIG", str(other))
    assert config.load(None, lake).machines == {"n": {}}
    with pytest.raises(config.ConfigError, match="no such deployment file"):
        config.load(tmp_path / "missing.yaml", lake)


def test_the_cli_takes_the_machine_options_and_flags_win(tmp_path: Path, capsys) -> None:
    """``ingest zabbix --cluster m`` lands with m's options from the file; a flag given on the
    command line wins over the file; a broken file is one line, exit 2."""
    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "burstlake.yaml").write_text(
        "machines: {m: {sources: {zabbix: {interval: 30, host_prefix: [cn000=node]}}}}\n"
    )
    path = FIXTURES / "history-tags.ndjson"
    assert main(["ingest", "zabbix", str(path), "--lake", str(lake), "--cluster", "m"]) == 0
    rows = read_table(lake, "node_io", ["cluster", "node", "interval_s"]).to_pylist()
    assert {(r["cluster"], r["node"], r["interval_s"]) for r in rows} == {("m", "node01", 30)}
    other = tmp_path / "lake2"
    other.mkdir()
    (other / "burstlake.yaml").write_text((lake / "burstlake.yaml").read_text())
    argv = ["ingest", "zabbix", str(path), "--lake", str(other), "--cluster", "m"]
    assert main([*argv, "--interval", "10"]) == 0
    assert set(read_table(other, "node_io", ["interval_s"]).column(0).to_pylist()) == {10}
    (other / "burstlake.yaml").write_text("machines: {m: {sources: {zabbix: {bad: 1}}}}\n")
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("burstlake ingest: ") and "zabbix.bad: not an option" in err
    assert "\n" not in err


def test_a_flag_equal_to_its_default_still_wins(tmp_path: Path) -> None:
    """``--memory-limit 1GB`` and ``--tz UTC`` (the defaults) given on the command line win
    over the file's values; a flag not given takes the file's."""
    from burstlake.cli import build_parser
    from burstlake.cli.ingest import options_of

    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "burstlake.yaml").write_text(
        "machines: {m: {sources: {zabbix: {memory_limit: 2GB, interval: 30},"
        " slurm: {tz: America/Los_Angeles}}}}\n"
    )
    parse = build_parser().parse_args
    base = ["--lake", str(lake), "--cluster", "m"]
    given = options_of(parse(["ingest", "zabbix", *base, "--memory-limit", "1GB"]))
    assert (given["memory_limit"], given["interval"]) == ("1GB", 30)
    assert options_of(parse(["ingest", "zabbix", *base]))["memory_limit"] == "2GB"
    assert options_of(parse(["ingest", "slurm", *base, "--tz", "UTC"]))["tz"] == "UTC"
    assert options_of(parse(["ingest", "slurm", *base]))["tz"] == "America/Los_Angeles"


def test_the_scheduled_replay_runs_the_scenarios_the_file_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``replay:`` lists the scenario files the scheduled replay runs, in order, relative to the
    file's folder; without it, those of $BURSTLAKE_SCENARIOS, else none (not every shipped
    example). A missing file or a non-text entry is one line naming the key."""
    from burstlake.replay.scenario import scheduled

    (tmp_path / "s").mkdir()
    for name in ("b", "a"):
        (tmp_path / "s" / f"{name}.yaml").write_text("name: x\n")
    path = _write(tmp_path, GOOD + "replay: [s/b.yaml, s/a.yaml]\n")
    named = config.load(path).scenarios
    assert named == (tmp_path / "s" / "b.yaml", tmp_path / "s" / "a.yaml")
    monkeypatch.delenv("BURSTLAKE_SCENARIOS", raising=False)
    assert scheduled(named) == [str(tmp_path / "s" / "b.yaml"), str(tmp_path / "s" / "a.yaml")]
    assert scheduled(()) == []
    monkeypatch.setenv("BURSTLAKE_SCENARIOS", str(tmp_path / "s"))
    assert scheduled(()) == [str(tmp_path / "s" / "a.yaml"), str(tmp_path / "s" / "b.yaml")]
    for entry, message in [
        ("[s/c.yaml]", "replay[0]: no scenario file"),
        ("[3]", "replay[0]: a scenario file's path"),
        ("s/a.yaml", "replay: must be a list"),
    ]:
        with pytest.raises(
            config.ConfigError, match=f"burstlake.yaml: {message}".replace("[", r"\[")
        ):
            config.load(_write(tmp_path, GOOD + f"replay: {entry}\n"))
