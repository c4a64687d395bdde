"""The product's own modules read as source: what each imports (the layer and design-doc checks)."""

from __future__ import annotations

import ast


def imports(tree: ast.AST) -> set[str]:
    """The absolute module names ``tree`` imports (``import m``, ``from m import ...``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names
