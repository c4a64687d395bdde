"""The source contract (jobs/ingest/source.py): options declared once as data, checked the same
way from the command line and the deployment file; progress as Steps (docs/design.md,
"Sources")."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from burstlake import config
from burstlake.cli import build_parser
from burstlake.cli.ingest import options_of
from burstlake.jobs.ingest import SOURCES, source_module
from burstlake.jobs.ingest.landing import ingest
from burstlake.jobs.ingest.source import CLUSTER, Option
from burstlake.progress import Step
from tests.builders.paths import FIXTURES


def _refusal(tmp_path: Path, source: str, options: str) -> str:
    """The one-line refusal of a deployment file giving machine m these options."""
    path = tmp_path / "burstlake.yaml"
    path.write_text(f"machines: {{m: {{sources: {{{source}: {options}}}}}}}\n")
    with pytest.raises(config.ConfigError) as caught:
        config.load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    return message.removeprefix(f"{path}: ")


@pytest.mark.parametrize(
    ("source", "options", "refusal"),
    [
        # the option's declared type
        ("zabbix", "{interval: ten}", "zabbix.interval: 'ten' is not a valid value"),
        ("zabbix", "{interval: 2.7}", "zabbix.interval: '2.7' is not a valid value"),
        ("zabbix", "{gap_factor: many}", "zabbix.gap_factor: 'many' is not a valid value"),
        ("zabbix", "{keep-domain: 3}", "zabbix.keep-domain: must be true or false, not 3"),
        ("topology", "{ion_per_cabinet: yes please}", "ion_per_cabinet: must be true or false"),
        ("zabbix", "{host_prefix: {a: b}}", "zabbix.host_prefix: must be a single value"),
        ("slurm", "{tz: [UTC, CET]}", "slurm.tz: must be a single value, not ['UTC', 'CET']"),
        # its bounds, checked before the source's own check reads anything
        ("zabbix", "{interval: 0}", "zabbix.interval: --interval must be 1..86400 seconds"),
        ("zabbix", "{interval: 86401}", "interval: --interval must be 1..86400 seconds (a day)"),
        ("zabbix", "{threads: 257}", "zabbix.threads: --threads must be 1..256, not 257"),
        ("zabbix", "{gap-factor: 0.5}", "zabbix.gap-factor: --gap-factor must be a finite"),
        ("zabbix", "{gap_factor: .inf}", "gap_factor: --gap-factor must be a finite number >= 1"),
        # a key the schema does not declare, --cluster included (the machine sets it)
        ("zabbix", "{intervall: 10}", "zabbix.intervall: not an option of zabbix (options: "),
        ("slurm", "{cluster: x}", "slurm.cluster: not an option of slurm (options: tz)"),
        ("darshan", "{tz: UTC}", "darshan.tz: not an option of darshan (options: none)"),
    ],
)
def test_deployment_options_are_checked_from_the_schema(
    tmp_path: Path, source: str, options: str, refusal: str
) -> None:
    message = _refusal(tmp_path, source, options)
    assert message.startswith(f"machines.m.sources.{source}.") and refusal in message


def _outside(option: Option) -> list[str]:
    """Values the schema alone refuses for an option: of another type, outside its bounds."""
    if option.flag:
        return ["'maybe'"]
    values = []
    if option.type in (int, float):
        values.append("'not a number'")
    low, high = option.bounds or (None, None)
    if low is not None:
        values.append(str(low - 1))
    if high is not None:
        values.append(str(high + 1))
    return values


@pytest.mark.parametrize("source", SOURCES)
def test_every_declared_type_and_bound_is_refused_naming_the_key(
    tmp_path: Path, source: str
) -> None:
    """Whatever a source declares, a value outside it is one line naming file and key."""
    for option in source_module(source).SOURCE.options:
        for value in _outside(option):
            message = _refusal(tmp_path, source, f"{{{option.name}: {value}}}")
            assert message.startswith(f"machines.m.sources.{source}.{option.name}: "), message


def test_an_option_converts_and_checks_one_value() -> None:
    level = Option("level", type=int, choices=(1, 2, 3))
    assert level.convert("2") == 2
    with pytest.raises(ValueError, match=r"^'4' is not one of 1, 2, 3$"):
        level.convert("4")
    size = Option("size", type=int, bounds=(1, 2_000_000), unit="bytes")
    assert size.convert("2000000") == 2_000_000
    with pytest.raises(ValueError, match=r"^--size must be 1\.\.2000000 bytes, not 2000001$"):
        size.convert("2000001")
    share = Option("share", type=float, bounds=(None, 1))
    assert share.convert("-0.5") == -0.5
    for text, shown in (("1.5", "1.5"), ("nan", "nan"), ("-inf", "-inf")):
        with pytest.raises(
            ValueError, match=rf"^--share must be a finite number <= 1, not {shown}$"
        ):
            share.convert(text)
    assert Option("prefix", repeated=True).initial == []
    assert Option("keep", flag=True).initial is False


def test_the_command_line_refuses_what_the_file_refuses(capsys) -> None:
    """The flags are built from the same schema: the same bound, the same wording."""
    parse = build_parser().parse_args
    with pytest.raises(SystemExit) as code:
        parse(["ingest", "zabbix", "x", "--interval", "0"])
    assert code.value.code == 2
    assert "--interval must be 1..86400 seconds (a day), not 0" in capsys.readouterr().err
    args = parse(["ingest", "zabbix", "x", "--host-prefix", "a=b", "--host-prefix", "c=d"])
    assert (args.host_prefix, hasattr(args, "interval")) == (["a=b", "c=d"], False)


@pytest.mark.parametrize("source", SOURCES)
def test_every_option_has_its_flag(source: str, capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["ingest", source, "--help"])
    text = capsys.readouterr().out
    for option in (CLUSTER, *source_module(source).SOURCE.options):
        assert option.flag_name in text, option.name


def test_a_flag_given_at_its_default_wins_over_the_file(tmp_path: Path) -> None:
    """Every option with a default: the file sets another value, the command line gives the
    default, and the default wins; without the flag the file's value holds."""
    other = {"tz": "America/Los_Angeles", "memory_limit": "2GB"}
    lake = tmp_path / "lake"
    lake.mkdir()
    with_defaults = {
        source: [o for o in source_module(source).SOURCE.options if o.default is not None]
        for source in SOURCES
    }
    sources = {
        source: {o.name: other[o.name] for o in options}
        for source, options in with_defaults.items()
        if options
    }
    assert sum(map(len, sources.values())) == 2  # slurm's tz, zabbix's memory_limit
    (lake / "burstlake.yaml").write_text(f"machines: {{m: {{sources: {sources}}}}}\n")
    parse = build_parser().parse_args
    for source, options in with_defaults.items():
        for option in options:
            base = ["ingest", source, "--lake", str(lake), "--cluster", "m"]
            given = options_of(parse([*base, option.flag_name, str(option.default)]))
            assert given[option.name] == option.default
            assert options_of(parse(base))[option.name] == other[option.name]


def test_progress_is_the_files_bytes_as_steps(lake: Path, tmp_path: Path) -> None:
    """ingest reports Steps of one task whose advances add up to the files' sizes (a gzip
    file's decompressed bytes are put back to its size once it has landed), then done."""
    plain = FIXTURES / "slurm" / "het_array.sacct"
    packed = tmp_path / "columns.sacct.gz"
    packed.write_bytes(gzip.compress((FIXTURES / "slurm" / "columns.sacct").read_bytes()))
    steps: list[Step] = []
    ingest(source_module("slurm").SOURCE, [plain, packed], lake, report=steps.append)
    total = plain.stat().st_size + packed.stat().st_size
    assert {(s.what, s.unit, s.total) for s in steps} == {("ingest slurm", "B", total)}
    assert sum(s.advance for s in steps) == total
    assert steps[-1].done and not any(s.done for s in steps[:-1])
