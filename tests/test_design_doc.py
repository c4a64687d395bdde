"""docs/design.md stays true where a check is cheap: every command of the command line has its
line in "Command line", every file and name it cites exists, and stages import each other
only as "The lake: the only interface between stages" says."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from burstlake.cli import COMMANDS
from tests.builders.modules import imports
from tests.builders.paths import REPO

DESIGN = REPO / "docs" / "design.md"
STAGES = {  # a stage's folder -> the stages it may import (docs/design.md, "The lake")
    "jobs/ingest": set(),
    "jobs/metrics": set(),
    "jobs/synth": {"jobs/ingest", "jobs/metrics"},
    "replay": {"jobs/ingest", "jobs/metrics"},
}


def _section(title: str) -> str:
    """The text of the ``## title`` section of docs/design.md."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", DESIGN.read_text(), re.M | re.S)
    assert match, f"docs/design.md has no '## {title}' section"
    return match.group(1)


def test_every_command_has_its_line_in_the_command_line_section() -> None:
    [block] = re.findall(r"```\n(.*?)```", _section("Command line"), re.S)
    listed = re.findall(r"^burstlake (\w+)", block, re.M)
    assert sorted(set(listed)) == sorted(COMMANDS), (
        f"docs/design.md, 'Command line' lists {sorted(set(listed))}; "
        f"burstlake/cli/__init__.py:COMMANDS is {sorted(COMMANDS)}"
    )


def _defines(module: Path, dotted: str) -> bool:
    """Whether ``module`` defines ``Name`` or ``Class.attribute`` at its top level."""
    body = ast.parse(module.read_text()).body
    for part in dotted.split("."):
        found = None
        for node in body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name == part:
                    found = node
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == part for t in targets):
                    found = node
        if found is None:
            return False
        body = getattr(found, "body", [])
    return True


def test_every_file_and_name_the_document_cites_exists() -> None:
    """A citation is ``path.py`` or ``path.py:Name[.attribute]`` in backquotes; a path may be
    written from the repository root or as the tail of one (``run.py`` in "Metrics")."""
    tops = [d for d in REPO.iterdir() if d.is_dir() and d.name[0] != "." and d.name != "build"]
    files = [p for top in tops for p in top.rglob("*.py")]
    stale = []
    for path, name in set(re.findall(r"`([\w/.]+\.py)(?::([\w.]+))?`", DESIGN.read_text())):
        candidates = [p for p in files if p.relative_to(REPO).as_posix().endswith(path)]
        if (REPO / path).is_file():
            candidates.append(REPO / path)
        if not candidates:
            stale.append(f"{path}: no such file")
        elif name and not any(_defines(p, name) for p in candidates):
            stale.append(f"{path}:{name}: not defined there")
    assert not stale, "docs/design.md cites what the code no longer has:\n" + "\n".join(stale)


def _stage_of(module: str) -> str | None:
    """The stage folder of an imported module name, or None outside the stages."""
    return next(
        (f for f in STAGES if (module + ".").startswith(f"burstlake.{f.replace('/', '.')}.")), None
    )


def test_stages_import_only_the_stages_the_design_allows() -> None:
    wrong = []
    for stage, allowed in STAGES.items():
        for module in sorted((REPO / stage).rglob("*.py")):
            for name in imports(ast.parse(module.read_text())):
                other = _stage_of(name)
                if other not in (None, stage, *allowed):
                    wrong.append(f"{module.relative_to(REPO)} imports {name}")
    assert not wrong, "stages import each other against docs/design.md:\n" + "\n".join(wrong)
