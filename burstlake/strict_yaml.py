"""YAML as burstlake's own files use it (the deployment file; docs/design.md, "Deployment"):
no aliases (an alias bomb is refused instead of expanded), no key given twice in one
mapping (YAML would keep the last silently), and no nesting deeper than :data:`MAX_DEPTH` (a
file nested thousands deep would exhaust Python's stack). Errors are one line with the line.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 32  # mappings and lists within each other; burstlake's files need fewer than 8


class StrictYAMLError(ValueError):
    """The text breaks one of the rules; the message is one line naming the line."""


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader refusing aliases, repeated keys and deep nesting (module doc)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.AliasEvent):
            line = self.peek_event().start_mark.line + 1
            raise StrictYAMLError(f"line {line}: aliases (*name) are not allowed")
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise StrictYAMLError(f"line {line}: nested more than {MAX_DEPTH} deep")
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        return node

    def construct_mapping(self, node, deep=False):  # type: ignore[no-untyped-def]
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:  # a list or mapping as a key
                raise StrictYAMLError(
                    f"line {key_node.start_mark.line + 1}: a key must be text or a number"
                ) from None
            if repeated:
                line = key_node.start_mark.line + 1
                raise StrictYAMLError(f"line {line}: key {key!r} is given twice")
            seen.add(key)
        return super().construct_mapping(node, deep)


def loads(text: str) -> Any:
    """The YAML document in ``text`` (StrictYAMLError: one line, with the line number)."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader
    except StrictYAMLError:
        raise
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "file"
        problem = getattr(err, "problem", None) or " ".join(str(err).split())
        raise StrictYAMLError(f"{where}: not valid YAML ({problem})") from None
    except RecursionError:  # the parser's own recursion, before any node is composed
        raise StrictYAMLError(f"nested more than {MAX_DEPTH} deep") from None
