"""Zabbix real-time export lines (NDJSON, one history sample a line), as a Zabbix server's
``ExportType=history`` writes them: the member order of the server's files, the values given."""

from __future__ import annotations

import json
from typing import Any

READ = "Lustre read bytes"  # an item of the packaged mapping: a read-byte counter


def zabbix_record(
    host: object,
    clock: object,
    value: object,
    *,
    itemid: object = 1,
    name: str = READ,
    ns: object = 0,
    kind: object = 3,
    host_name: bool = True,
    groups: list[str] | None = None,
    item_tags: list[dict] | None = None,
    key: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One history sample: ``host`` a host name (as ``{"host": h, "name": h}``, or
    ``{"host": h}`` without ``host_name``) or the host object itself; ``kind`` the value type
    (3: unsigned integer); ``groups``, ``item_tags`` and ``key`` (``key_``) only when given;
    ``extra`` members last."""
    if isinstance(host, str):
        host = {"host": host, "name": host} if host_name else {"host": host}
    record: dict[str, Any] = {"host": host}
    if groups is not None:
        record["groups"] = groups
    if item_tags is not None:
        record["item_tags"] = item_tags
    record |= {"itemid": itemid, "name": name}
    if key is not None:
        record["key_"] = key
    record |= {"clock": clock, "ns": ns, "value": value, "type": kind}
    return record | extra


def zabbix_line(host: object, clock: object, value: object, **options: Any) -> str:
    """:func:`zabbix_record` as one export line (no line end); ``ensure_ascii=False`` keeps
    non-ASCII host names as UTF-8."""
    ensure_ascii = options.pop("ensure_ascii", True)
    return json.dumps(zabbix_record(host, clock, value, **options), ensure_ascii=ensure_ascii)


def zabbix_export(lines: list[str]) -> str:
    """An export file's text: the lines, each ended by a newline."""
    return "\n".join(lines) + "\n"
