"""The dragonfly under the packet model against CODES' ``dragonfly-dally`` (codes-org/codes,
src/networks/model-net/dragonfly-dally.cxx) driven by ``model-net-synthetic-dragonfly-all``,
both run here in one process tree each (wall, CPU, events, peak memory).

Cases: CODES' own configs ``dfdally_72`` (and ``dfdally_3k`` with ``BURSTLAKE_DFLY_3K=1``),
its connection files (the ones the build checked out, read by CODES; rebuilt by burstlake's
``dragonfly`` family), ``uniform`` and ``nearest-group`` traffic, offered loads 10 % to 90 % of
the injection bandwidth, routings ``minimal``, ``valiant`` (CODES ``nonminimal``) and ``par``
(``prog-adaptive``). Every node sends ``BURSTLAKE_DFLY_MESSAGES`` (default 100) messages of
2,048 bytes (CODES' default payload) at the fixed inter-arrival time of the load. Figures per
case: mean packet latency (one packet per message: CODES' "Mean Message Latency", from the
message's creation to its arrival, as burstlake's; CODES' "average chunk latency" starts when the
chunk leaves the NIC's queue and is recorded beside it), mean hops
(routers left) and the observed load in GiB/s per node, computed for burstlake as CODES'
driver does (bytes received by a node over its sends' first-to-last acknowledgement time).

Goals (issue 38): latency, hops and observed load within 15 % of CODES' per load; the
saturation load (the highest load offered whose observed load is at least 95 % of it) within
10 %; on nearest-group traffic par's observed load over minimal's within 25 % of CODES' ratio;
speed at least 10x CODES' on a dfdally_3k case of ``BURSTLAKE_DFLY_SPEED_MESSAGES`` (default
1000) messages per node (with ``BURSTLAKE_DFLY_3K=1``; ``BURSTLAKE_DFLY_ONLY=speed`` runs that
case alone and merges it into the last result, whose per-load cases it keeps).

``BURSTLAKE_CODES`` names the CODES build (``../shared/peers/codes``: ``build.sh``); without it
only burstlake's side runs, and the result says so.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from bench import RESULTS, STEP_TIMEOUT_S, Goal, measure, write_result

GIB = 2.0**30
PAYLOAD = 2048
LOADS = (0.1, 0.3, 0.5, 0.7, 0.9)
PATTERNS = {"uniform": 1, "nearest-group": 3}  # burstlake pattern → CODES --traffic
ROUTINGS = {"minimal": "minimal", "valiant": "nonminimal", "par": "prog-adaptive"}
CONF_DIR = "src/network-workloads/conf/dragonfly-dally"
# the packet model's settings for each CODES config (dragonfly.py's docstring)
CONFIGS = {
    "dfdally_72": {
        "conf": "dfdally_72.conf",
        "cn_gibps": 2.0,
        "packet": {"buffer_bytes": 16384, "router_delay": 100e-9, "nic_delay": 0.0},
    },
    "dfdally_3k": {
        "conf": "dfdally_3k.conf",
        "cn_gibps": 6.25,
        "packet": {"buffer_bytes": 65536, "router_delay": 90e-9, "nic_delay": 10e-9},
    },
}
HOPS = re.compile(r"Average number of hops traversed ([\d.]+) average chunk latency ([\d.]+) us "
                  r"maximum chunk latency ([\d.]+) us")  # fmt: skip
MESSAGE = re.compile(r"Mean Message Latency: ([\d.]+) us,\s+Maximum Message Latency: ([\d.]+) us")
LOAD = re.compile(r"AVG OFFERED LOAD = ([\d.]+)\s+\|\s+AVG OBSERVED LOAD = ([\d.]+)")
EVENTS = re.compile(r"Net Events Processed\s+(\d+)")
NAME = "dragonfly_vs_codes"
CODES_VERSION = "ROSS 9b6ccb18, CODES a5958cfa (shared/peers/codes), sequential"
# what write_result adds about the machine and the goals it recomputes: not kept on a merge
MACHINE_KEYS = ("benchmark", "goals", "cpus", "load_average_1min", "python", "date")

RUN = """
import json, time
from burstlake.replay import models
from burstlake.replay.topologies import build
from burstlake.replay.workloads import synthetic as sy
out = []
for case in {cases!r}:
    t0 = time.perf_counter()
    machine = build({{"name": case["preset"], "routing": case["routing"]}})
    machine = machine.with_contention(models.parse({{"name": "packet", **{packet!r}}}))
    work = sy.demand({{"pattern": case["pattern"], "interval": case["interval"],
                      "messages": case["messages"], "seed": case["seed"]}}, machine)
    got = sy.measure(machine, work)
    observed = got["observed_load"] * work.injection / 2**30
    got |= {{"observed_gibps": observed, "seconds": time.perf_counter() - t0}}
    out.append(case | got)
print(json.dumps(out))
"""


def codes_peer() -> Path | None:
    prefix = os.environ.get("BURSTLAKE_CODES")
    if not prefix:
        return None
    peer = Path(prefix)
    if not (peer / "bin" / "model-net-synthetic-dragonfly-all").exists():
        raise SystemExit(f"BURSTLAKE_CODES={peer}: no bin/model-net-synthetic-dragonfly-all")
    return peer


def interval_ns(load: float, cn_gibps: float) -> float:
    """CODES' inter-arrival time for ``load`` (``bytes_to_ns(PAYLOAD, load × cn_bandwidth)``)."""
    return PAYLOAD / (load * cn_gibps * GIB) * 1e9


def codes_conf(prefix: Path, config: str, routing: str, work: Path) -> Path:
    """CODES' config with its connection files at absolute paths and ``routing`` set."""
    source = prefix / "src" / "codes" / CONF_DIR
    text = (source / CONFIGS[config]["conf"]).read_text()
    text = re.sub(r'"\.\./' + CONF_DIR + r"/", f'"{source}/', text)
    text = re.sub(r'routing="[^"]*"', f'routing="{routing}"', text)
    path = work / f"{config}-{routing}.conf"
    path.write_text(text)
    return path


def codes_case(prefix: Path, config: str, case: dict) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        conf = codes_conf(prefix, config, ROUTINGS[case["routing"]], Path(tmp))
        step = measure(
            [
                str(prefix / "bin" / "model-net-synthetic-dragonfly-all"),
                "--synch=1",
                f"--traffic={PATTERNS[case['pattern']]}",
                f"--num_messages={case['messages']}",
                f"--payload_sz={PAYLOAD}",
                f"--arrival_time={case['interval'] * 1e9:.3f}",
                "--",
                str(conf),
            ],
            cwd=tmp,
        )
    out = {"wall_s": step.wall_s, "cpu_s": step.cpu_s, "peak_rss_mb": step.peak_mb}
    for name, pattern in (("hops", HOPS), ("message", MESSAGE), ("load", LOAD)):
        found = pattern.search(step.stdout)
        out[name] = [float(x) for x in found.groups()] if found else None
    found = EVENTS.search(step.stdout)
    out["events"] = int(found.group(1)) if found else None
    return out


def cases(config: str, messages: int) -> list[dict]:
    preset = config
    return [
        {
            "preset": preset,
            "pattern": pattern,
            "routing": routing,
            "load": load,
            "interval": interval_ns(load, CONFIGS[config]["cn_gibps"]) * 1e-9,
            "messages": messages,
            "seed": 0,
        }
        for pattern in PATTERNS
        for routing in ROUTINGS
        for load in LOADS
    ]


def python_rows(config: str, todo: list[dict]) -> tuple[list[dict], dict]:
    """burstlake's cases of one config in one measured process: its rows and the step."""
    step = measure([sys.executable, "-c", RUN.format(cases=todo, packet=CONFIGS[config]["packet"])],
                   STEP_TIMEOUT_S)  # fmt: skip
    printed = [line for line in step.stdout.splitlines() if line.startswith("[")]
    rows = json.loads(printed[-1]) if printed else []
    return rows, {"wall_s": step.wall_s, "cpu_s": step.cpu_s, "peak_rss_mb": step.peak_mb}


def within(ours_value: float | None, theirs: float | None, share: float) -> bool | None:
    if ours_value is None or theirs is None or theirs == 0:
        return None
    return abs(ours_value - theirs) <= share * abs(theirs)


def saturation(rows: list[dict], key) -> float | None:
    """The highest load offered whose observed load is at least 95 % of the offered one."""
    ok = [r["load"] for r in rows if key(r) is not None and key(r) >= 0.95 * r["offered_gibps"]]
    return max(ok) if ok else None


def compare(config: str, rows: list[dict], theirs: dict) -> dict:
    cn = CONFIGS[config]["cn_gibps"]
    table, goals = [], {"latency": [], "hops": [], "load": []}
    for row in rows:
        key = (row["pattern"], row["routing"], row["load"])
        codes = theirs.get(key)
        entry = {
            "pattern": row["pattern"],
            "routing": row["routing"],
            "load": row["load"],
            "offered_gibps": row["load"] * cn,
            "burstlake": {
                "latency_us": row["packet_latency_mean"] * 1e6,
                "hops": row["mean_hops"],
                "observed_gibps": row["observed_gibps"],
                "accepted_share": row["accepted_share"],
                "seconds": row["seconds"],
            },
        }
        if codes and codes.get("hops"):
            entry["codes"] = {
                "latency_us": codes["message"][0] if codes.get("message") else None,
                "chunk_latency_us": codes["hops"][1],
                "hops": codes["hops"][0],
                "observed_gibps": codes["load"][1] if codes.get("load") else None,
                "wall_s": codes["wall_s"],
                "cpu_s": codes["cpu_s"],
                "events": codes["events"],
            }
            for name, a, b in (
                ("latency", "latency_us", "latency_us"),
                ("hops", "hops", "hops"),
                ("load", "observed_gibps", "observed_gibps"),
            ):
                met = within(entry["burstlake"][a], entry["codes"][b], 0.15)
                entry[f"{name}_within_15pct"] = met
                goals[name].append(met)
        table.append(entry)
    summary: dict = {
        f"{name}_within_15pct": f"{sum(bool(m) for m in met)}/{len(met)}"
        for name, met in goals.items()
        if met
    }
    for pattern in PATTERNS:
        for routing in ROUTINGS:
            part = [e for e in table if e["pattern"] == pattern and e["routing"] == routing]
            ours_sat = saturation(part, lambda e: e["burstlake"]["observed_gibps"])
            codes_sat = saturation(part, lambda e: (e.get("codes") or {}).get("observed_gibps"))
            summary[f"saturation_{pattern}_{routing}"] = {"burstlake": ours_sat, "codes": codes_sat}
    ratio = {}
    for who in ("burstlake", "codes"):
        par = [e[who]["observed_gibps"] for e in table if who in e and e["pattern"] ==
               "nearest-group" and e["routing"] == "par"]  # fmt: skip
        low = [e[who]["observed_gibps"] for e in table if who in e and e["pattern"] ==
               "nearest-group" and e["routing"] == "minimal"]  # fmt: skip
        if par and low and all(low):
            ratio[who] = [p / m for p, m in zip(par, low, strict=True)]
    summary["par_over_minimal_nearest_group"] = ratio
    return {"cases": table, "summary": summary}


def goals(result: dict) -> list[Goal]:
    """The issue's goals (module docstring) as met or missed, over every config run against
    CODES: a goal counts as met only where every case meets it."""
    configs = [c for c in CONFIGS if "codes_process_cpu_s" in result.get(c, {})]
    if not configs:
        return []
    out = []

    def cases(name: str) -> list[tuple[str, dict]]:
        return [(c, e) for c in configs for e in result[c]["cases"] if f"{name}_within_15pct" in e]

    for name, what in (
        ("latency", "mean packet latency"),
        ("hops", "mean hops"),
        ("load", "observed load"),
    ):
        rows = cases(name)
        key = {"latency": "latency_us", "hops": "hops", "load": "observed_gibps"}[name]
        bad = [f"{c} {e['pattern']} {e['routing']} at {e['load']:.0%}: "
               f"{e['burstlake'][key] / e['codes'][key] - 1:+.0%}" for c, e in rows
               if not e[f"{name}_within_15pct"]]  # fmt: skip
        figure = f"{len(rows) - len(bad)}/{len(rows)} cases" + (f" (not: {', '.join(bad)})"
                                                                  if bad else "")  # fmt: skip
        out.append(Goal(f"{what} within 15 % of CODES' per load", figure, not bad))
    sat, bad = 0, []
    for c in configs:
        for key, both in result[c]["summary"].items():
            if key.startswith("saturation_"):
                sat += 1
                ours, theirs = both["burstlake"], both["codes"]
                if ours is None or theirs is None or abs(ours - theirs) > 0.1 * theirs:
                    bad.append(f"{c} {key[len('saturation_') :]}: {ours} vs {theirs}")
    figure = f"within 10 % in {sat - len(bad)}/{sat}" + (f" (not: {'; '.join(bad)})" if bad else "")
    out.append(Goal("saturation load within 10 % of CODES'", figure, not bad))
    worst = 0.0
    for c in configs:
        ratio = result[c]["summary"]["par_over_minimal_nearest_group"]
        for ours, theirs in zip(ratio["burstlake"], ratio["codes"], strict=True):
            worst = max(worst, abs(ours / theirs - 1))
    out.append(
        Goal(
            "par/minimal accepted throughput on nearest-group within 25 % of CODES' ratio",
            f"within {worst:.0%} at every load",
            worst <= 0.25,
        )
    )
    if "speed" in result:
        speed = result["speed"]
        out.append(
            Goal(
                "10x CODES' wall time on dfdally_3k, whole processes",
                f"{speed['speedup_wall']:.1f}x ({speed['burstlake']['wall_s']:.1f} s vs "
                f"{speed['codes']['wall_s']:.1f} s)"
                + (f"; CPU {speed['speedup_cpu']:.1f}x" if "speedup_cpu" in speed else ""),
                speed["speedup_wall"] >= 10,
            )
        )
    return out


def main() -> Path:
    if os.environ.get("BURSTLAKE_DFLY_ONLY") == "speed":
        return speed_only()
    prefix = codes_peer()
    messages = int(os.environ.get("BURSTLAKE_DFLY_MESSAGES", "100"))
    configs = ["dfdally_72"] + (["dfdally_3k"] if os.environ.get("BURSTLAKE_DFLY_3K") else [])
    result: dict = {"messages_per_node": messages, "payload_bytes": PAYLOAD, "loads": LOADS}
    for config in configs:
        todo = cases(config, messages)
        rows, step = python_rows(config, todo)
        theirs = {}
        if prefix is not None:
            for case in todo:
                print(f"  {config}: CODES {case['pattern']} {case['routing']} {case['load']}")
                key = (case["pattern"], case["routing"], case["load"])
                theirs[key] = codes_case(prefix, config, case)
        result[config] = compare(config, rows, theirs) | {"burstlake_process": step}
        if prefix is not None:
            result[config]["codes_process_cpu_s"] = sum(c["cpu_s"] for c in theirs.values())
    if prefix is None:
        result["codes"] = "not run: set BURSTLAKE_CODES to a CODES build (shared/peers/codes)"
    elif "dfdally_3k" in configs:
        result["speed"] = speed(prefix)
    result["codes_version"] = CODES_VERSION
    return write_result(NAME, result, goals(result))


def speed(prefix: Path) -> dict:
    """The speed case (module docstring): burstlake's and CODES' whole processes, one after
    the other, with the load average before and after each."""
    messages = int(os.environ.get("BURSTLAKE_DFLY_SPEED_MESSAGES", "1000"))
    case = cases("dfdally_3k", messages)[0] | {"routing": "par", "load": 0.5}
    case["interval"] = interval_ns(0.5, CONFIGS["dfdally_3k"]["cn_gibps"]) * 1e-9
    loads = [os.getloadavg()[0]]
    rows, ours_step = python_rows("dfdally_3k", [case])
    loads.append(os.getloadavg()[0])
    codes = codes_case(prefix, "dfdally_3k", case)
    loads.append(os.getloadavg()[0])
    ours = ours_step | ({"events": rows[0]["events"], "in_process_s": rows[0]["seconds"]}
                        if rows else {})  # fmt: skip
    return {
        "case": case,
        "burstlake": ours,
        "codes": {k: codes[k] for k in ("wall_s", "cpu_s", "peak_rss_mb", "events")},
        "speedup_wall": codes["wall_s"] / ours_step["wall_s"],
        "speedup_cpu": codes["cpu_s"] / ours_step["cpu_s"],
        "goal_10x_met": codes["wall_s"] / ours_step["wall_s"] >= 10,
        "load_average_1min": {"before": loads[0], "between": loads[1], "after": loads[2]},
    }


def speed_load(cases: str | None, speed_case: dict) -> str:
    """The result's ``load`` line after a speed rerun: the per-load cases' (as measured
    then) and the speed case's, before, between (burstlake done) and after (CODES done)."""
    rerun = (f"speed case rerun: {speed_case['before']:.1f} before, {speed_case['between']:.1f} "
             f"after burstlake, {speed_case['after']:.1f} after CODES")  # fmt: skip
    kept = (cases or "").split("; speed case rerun:")[0]
    return f"per-load cases: {kept.removeprefix('per-load cases: ')}; {rerun}" if kept else rerun


def speed_only() -> Path:
    """Rerun only the speed case (``BURSTLAKE_DFLY_ONLY=speed``), merged into the last
    result: its per-load cases stay as they were measured."""
    prefix = codes_peer()
    if prefix is None:
        raise SystemExit("BURSTLAKE_DFLY_ONLY=speed compares with CODES: set BURSTLAKE_CODES")
    path = RESULTS / f"{NAME}.json"
    last = json.loads(path.read_text()) if path.exists() else {}
    kept = {k: v for k, v in last.items() if k not in MACHINE_KEYS}
    fast = speed(prefix)
    notes = [n for n in kept.get("notes", []) if not n.startswith("Speed")]
    notes.append(
        f"Speed {'met' if fast['goal_10x_met'] else 'missed'}: {fast['speedup_wall']:.1f}x wall, "
        f"{fast['speedup_cpu']:.1f}x CPU ({fast['burstlake']['cpu_s']:.1f} s vs "
        f"{fast['codes']['cpu_s']:.1f} s), rerun alone on {time.strftime('%Y-%m-%d')} "
        f"(1-min load {fast['load_average_1min']['before']:.1f} before, "
        f"{fast['load_average_1min']['after']:.1f} after); the per-load cases are the last "
        "full run's (the packet model's timelines are bit-identical since)."
    )
    result = kept | {"speed": fast, "codes_version": CODES_VERSION, "notes": notes}
    result["load"] = speed_load(kept.get("load"), fast["load_average_1min"])
    return write_result(NAME, result, goals(result))
