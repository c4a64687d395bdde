"""Row and byte accounting of ingested files (docs/design.md, "Sources"): what each file
brought in, landed, quarantined or kept out, and the byte balance of traffic metrics
(seen = landed + quarantined + gap + reset), shared by every source and the command line."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass
class FileReport:
    """Row accounting of one ingested file."""

    source: str
    file: str
    source_id: str
    records_in: int = 0
    landed: int = 0
    quarantined: int = 0
    rows: dict[str, int] = field(default_factory=dict)  # lake rows written per table
    superseded: int = 0  # rows of earlier files replaced by this one's (same natural key)
    stale: int = 0  # records kept out: the lake holds newer content for them (an older dump)
    error: str | None = None  # set when the file was unusable as a whole
    traffic: dict[str, dict[str, int]] = field(default_factory=dict)  # metric -> reason -> n
    same_as: str | None = None  # the file already landed with the same bytes (nothing to do)
    keep: frozenset[str] = frozenset()  # earlier contents a stream keeps (StreamPart.keep_previous)
    # set when the lake could not take the file (full disk, read-only): what was committed
    failure: str | None = None

    def traffic_lines(self) -> list[str]:
        """One line per traffic metric: seen = landed + each named loss (+ unexplained)."""
        return [f"  {metric}: {describe_traffic(parts)}" for metric, parts in self.traffic.items()]

    def line(self) -> str:
        if self.failure:
            return f"{self.file}: {self.failure}"
        if self.same_as and self.error:
            return f"{self.file}: same content as {self.same_as}, refused: {self.error}"
        if self.same_as:
            return f"{self.file}: same content as {self.same_as}, already landed: nothing to do"
        text = (
            f"{self.file}: {self.records_in} records in, {self.landed} landed, "
            f"{self.quarantined} quarantined"
        )
        if self.stale:
            text += f", {self.stale} older than the lake's (kept out"
            text += ": nothing changed)" if self.stale == self.records_in else ")"
        if self.superseded:
            text += f" ({self.superseded} older rows superseded)"
        return text + (f" — unusable: {self.error}" if self.error else "")


def totals(reports: Iterable[FileReport]) -> dict[str, int]:
    """Row accounting summed over files: files, records_in, landed, quarantined, stale,
    superseded."""
    reports = list(reports)
    keys = ("records_in", "landed", "quarantined", "stale", "superseded")
    return {"files": len(reports), **{k: sum(getattr(r, k) for r in reports) for k in keys}}


def describe(totals_: dict[str, int]) -> str:
    """One line for ``totals``: '3 files, 12 records in, 10 landed, 2 quarantined'."""
    t = totals_
    return (
        f"{t['files']} files, {t['records_in']} records in, {t['landed']} landed, "
        f"{t['quarantined']} quarantined"
    ) + (f", {t['stale']} older than the lake's" if t.get("stale") else "")


TRAFFIC_REASONS = ("landed", "quarantined", "gap", "reset")
# The most bytes one traffic sum may hold: node_io's byte columns and ingest_log's balance are
# 64-bit integers (schemas/tables.py). A record that would take a sum past it is quarantined.
MAX_BYTES = 2**63 - 1


def overflowing(traffic: Mapping[str, Mapping[str, int]]) -> str | None:
    """The first traffic metric of a balance holding a sum past :data:`MAX_BYTES`, if any."""
    return next(
        (m for m, parts in traffic.items() if any(v > MAX_BYTES for v in parts.values())), None
    )


def describe_traffic(parts: Mapping[str, int]) -> str:
    """'seen 1200 = landed 1000 + gap 200': the balance of one traffic metric."""
    seen = parts.get("seen", 0)
    terms = [f"{r} {parts.get(r, 0)}" for r in TRAFFIC_REASONS if parts.get(r) or r == "landed"]
    unexplained = seen - sum(parts.get(r, 0) for r in TRAFFIC_REASONS)
    if unexplained:
        terms.append(f"UNEXPLAINED {unexplained}")
    return f"seen {seen} = " + " + ".join(terms)


def add_traffic(traffic: dict[str, dict[str, int]], metric: str, reason: str, amount: int) -> None:
    """Add ``amount`` bytes of ``metric`` under ``reason`` to a traffic balance."""
    parts = traffic.setdefault(metric, {})
    parts[reason] = parts.get(reason, 0) + int(amount)
