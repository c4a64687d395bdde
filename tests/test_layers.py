"""Layers import one way (docs/design.md, "Layers"): the command line wraps the library, the
library never imports the command line nor prints, and a missing subcommand fails loudly."""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import burstlake
from burstlake import cli
from tests.builders.modules import imports

PACKAGE = Path(burstlake.__file__).parent


def _modules() -> list[Path]:
    """Every module of the installed package, the command line's included (through the links
    to jobs/, schemas/, replay/ and notebooks/)."""
    return [
        Path(root) / name
        for root, _, names in os.walk(PACKAGE, followlinks=True)
        for name in names
        if name.endswith(".py")
    ]


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The syntax tree of one module, parsed once per test run."""
    return ast.parse(path.read_text(), str(path))


@functools.cache
def _walk(path: Path) -> tuple[ast.AST, ...]:
    """Every node of one module's syntax tree, walked once per test run."""
    return tuple(ast.walk(_tree(path)))


def _library_modules() -> list[Path]:
    """Every module of the installed package outside ``burstlake/cli`` (through the links to
    jobs/, schemas/, replay/ and notebooks/)."""
    files = [p for p in _modules() if p.relative_to(PACKAGE).parts[0] != "cli"]
    assert any(p.relative_to(PACKAGE).parts[0] == "jobs" for p in files)
    return files


def test_library_never_imports_the_cli_nor_prints() -> None:
    offenders = []
    for path in _library_modules():
        tree = _tree(path)
        if any(n == "burstlake.cli" or n.startswith("burstlake.cli.") for n in imports(tree)):
            offenders.append(f"{path}: imports burstlake.cli")
        calls = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "print"
        ]
        offenders += [f"{path}:{line}: print" for line in calls]
    assert offenders == []


def test_library_never_parses_arguments_nor_draws_bars() -> None:
    """Only the command line imports ``argparse`` or ``tqdm``: library code takes its options as
    arguments and reports progress as :class:`burstlake.progress.Step` values the command line
    renders (docs/design.md, "Layers")."""
    offenders = {}
    for path in _library_modules():
        found = {
            name.split(".")[0]
            for name in imports(_tree(path))
            if name.split(".")[0] in ("argparse", "tqdm")
        }
        if found:
            offenders[path.relative_to(PACKAGE).as_posix()] = sorted(found)
    assert offenders == {}


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


REPLAY = PACKAGE / "replay"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _nodes(tree: ast.AST, top_level_only: bool) -> Iterator[ast.AST]:
    """Every node of ``tree``; with ``top_level_only`` none inside a function or class."""
    if not top_level_only:
        yield from ast.walk(tree)
        return
    stack = [tree]
    while stack:
        node = stack.pop()
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node
            stack.extend(ast.iter_child_nodes(node))


def _replay_imports(top_level_only: bool) -> dict[str, set[str]]:
    """Each module of burstlake.replay → the burstlake.replay modules it imports (``from m
    import name`` counts as importing ``m.name`` when that is a module). ``top_level_only``:
    leave out imports inside functions (the registries' ``_load``, lazy imports)."""
    files = sorted(p for p in REPLAY.rglob("*.py"))
    modules = {_module_name(p): p for p in files}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = _tree(path)
        found = set()
        for node in _nodes(tree, top_level_only):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def test_policies_and_workloads_never_import_each_other() -> None:
    """They meet in burstlake.replay.demands (docs/design.md, "Demands"), at run time or
    for types alone."""
    graph = _replay_imports(top_level_only=False)
    sides = ("burstlake.replay.policies", "burstlake.replay.workloads")
    assert any(m.startswith(sides[0] + ".") for m in graph)  # the walk found the modules
    assert any(m.startswith(sides[1] + ".") for m in graph)
    crossing = [
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        for here, there in (sides, sides[::-1])
        if (module == here or module.startswith(here + "."))
        and (target == there or target.startswith(there + "."))
    ]
    assert crossing == []


def test_replay_modules_import_without_circles() -> None:
    """No circle among the module-level imports of burstlake.replay, type-only ones included
    (a registry's ``_load`` imports its modules inside a function, after they are defined)."""
    graph = _replay_imports(top_level_only=True)
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> list[str]:
        if module in path:
            return [" -> ".join((*path[path.index(module) :], module))]
        if module in done:
            return []
        found = [c for target in sorted(graph[module]) for c in visit(target, (*path, module))]
        done.add(module)
        return found

    assert [c for module in sorted(graph) for c in visit(module, ())] == []


def test_the_contention_models_meet_only_in_the_contract() -> None:
    """The packet model and the flow model share ``burstlake.replay.requests`` (docs/design.md,
    "Contention models"); neither imports the other."""
    graph = _replay_imports(top_level_only=False)
    assert "burstlake.replay.requests" in graph["burstlake.replay.packet"]
    assert "burstlake.replay.events" not in graph["burstlake.replay.packet"]
    assert "burstlake.replay.packet" not in graph["burstlake.replay.events"]


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _underscore_crossings(package: str) -> list[str]:
    """Where a module outside ``package`` (the command line's included) imports or reads
    (``alias._name``) an underscore name of it, or ``package`` imports one of another
    burstlake package."""
    root = PACKAGE.parent.joinpath(*package.split("."))
    crossing = []
    for path in _modules():
        inside = path.is_relative_to(root)
        nodes = _walk(path)
        aliases: set[str] = set()  # local names bound to the package or one of its modules
        for node in nodes:
            if isinstance(node, ast.Import):
                aliases.update(
                    (a.asname or a.name.split(".")[0])
                    for a in node.names
                    if _within(a.name, package)
                )
                continue
            if not isinstance(node, ast.ImportFrom) or not node.module or node.level:
                continue
            for a in node.names:
                full = f"{node.module}.{a.name}"
                into = _within(node.module, package) or _within(full, package)
                if into:
                    aliases.add(a.asname or a.name)
                if inside == into or not node.module.startswith("burstlake"):
                    continue
                if a.name.startswith("_"):
                    crossing.append(f"{path}:{node.lineno}: {full}")
        if not inside:
            crossing += [
                f"{path}:{node.lineno}: {node.value.id}.{node.attr}"
                for node in nodes
                if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ]
    return crossing


def _packages() -> list[str]:
    """Every package under burstlake (through the links), burstlake itself left out."""
    return sorted(
        _module_name(Path(root) / "__init__.py")
        for root, _, names in os.walk(PACKAGE, followlinks=True)
        if "__init__.py" in names and Path(root) != PACKAGE
    )


@pytest.mark.parametrize("package", _packages())
def test_no_underscore_name_crosses_a_package_boundary(package: str) -> None:
    """No library module outside the package imports or reads an underscore name of it, and
    the package imports none of another's: each side uses the other's public names only
    (docs/design.md, "Layers")."""
    assert _underscore_crossings(package) == []


def test_the_lake_exports_no_underscore_name() -> None:
    """burstlake.lake's public surface is its ``__all__``: no underscore name in it."""
    import burstlake.lake as lake

    assert [name for name in lake.__all__ if name.startswith("_")] == []
    assert sorted(lake.__all__) == sorted(set(lake.__all__))
