"""SimGrid's side of ``bench/engine_vs_simgrid.py``: run with the system ``python3`` that has
SimGrid's Python bindings (Debian's ``python3-simgrid``), as
``python3 _simgrid_flows.py IN.json OUT.json [fast|per-flow]``.

IN.json is a flow file (see ``burstlake/replay/flows.py``) whose flows also name a source and
destination host (``src``, ``dst``). The platform is one Full zone: those hosts, the links at
their bandwidth with latency 0, and each flow's route from its source to its destination. The
network model is CM02 (max-min sharing) with TCP-gamma 0 and no cross traffic, the same model
as the burstlake solver.

Two drivers:

- ``fast`` (SimGrid at its fastest): one actor starts every flow with ``Comm.sendto_async`` at
  its start time and collects completions with ``Comm.wait_any_for`` (timed out at the next
  start), so the simulation switches context once per event, not once per flow;
- ``per-flow``: one actor per flow sleeps until its start and sends (``Comm.sendto``): most of
  SimGrid's time then goes to switching between actors.

OUT.json gets each flow's finish time, the wall and CPU time of ``Engine.run`` and the peak RSS.
"""

import json
import resource
import sys
import time

import simgrid
from simgrid import Actor, Comm, Engine, LinkInRoute, NetZone, this_actor

CONFIG = [
    "--cfg=network/model:CM02",
    "--cfg=network/TCP-gamma:0",
    "--cfg=network/crosstraffic:0",
    "--cfg=maxmin/precision:1e-9",
    "--cfg=surf/precision:1e-12",
    "--log=root.thres:critical",
]


def platform(engine: Engine, document: dict) -> dict:
    """One Full zone holding the flows' hosts, the links and every flow's route; the hosts."""
    zone = NetZone.create_full_zone("flows")
    hosts = {}
    for flow in document["flows"]:
        for name in (flow["src"], flow["dst"]):
            if name not in hosts:
                hosts[name] = zone.create_host(name, 1e9).seal()
    links = {}
    for name, bandwidth in document["links"].items():
        links[name] = zone.create_link(name, bandwidth).set_latency(0).seal()
    routed = set()
    for flow in document["flows"]:
        pair = (flow["src"], flow["dst"])
        if pair in routed:
            continue
        routed.add(pair)
        route = [LinkInRoute(links[name]) for name in flow["route"]]
        zone.add_route(hosts[pair[0]].netpoint, hosts[pair[1]].netpoint, None, None, route, False)
    zone.seal()
    return hosts


def fast(document: dict, hosts: dict, finish: list) -> Actor:
    """One actor: every flow started at its start time, completions collected by wait_any."""
    flows = document["flows"]
    order = sorted(range(len(flows)), key=lambda k: flows[k]["start"])

    def driver() -> None:
        pending: list = []  # comms in flight, and their flow numbers beside them
        owner: list = []
        i = 0
        while i < len(order) or pending:
            if i < len(order) and flows[order[i]]["start"] <= Engine.clock:
                while i < len(order) and flows[order[i]]["start"] <= Engine.clock:
                    flow = flows[order[i]]
                    comm = Comm.sendto_async(hosts[flow["src"]], hosts[flow["dst"]], flow["size"])
                    pending.append(comm)
                    owner.append(order[i])
                    i += 1
                continue
            if not pending:
                this_actor.sleep_until(flows[order[i]]["start"])
                continue
            if i < len(order):
                done = Comm.wait_any_for(pending, flows[order[i]]["start"] - Engine.clock)
            else:
                done = Comm.wait_any(pending)
            if done < 0:
                continue
            finish[owner[done]] = Engine.clock
            pending[done], owner[done] = pending[-1], owner[-1]  # swap-remove: O(1)
            pending.pop()
            owner.pop()

    return Actor.create("driver", next(iter(hosts.values())), driver)


def per_flow(document: dict, hosts: dict, finish: list) -> None:
    """One actor per flow: sleep until the start, send, note the clock."""

    def sender(k: int) -> None:
        flow = document["flows"][k]
        this_actor.sleep_until(flow["start"])
        Comm.sendto(hosts[flow["src"]], hosts[flow["dst"]], flow["size"])
        finish[k] = Engine.clock

    for k, flow in enumerate(document["flows"]):
        Actor.create(f"flow-{k}", hosts[flow["src"]], sender, k)


def main(source: str, target: str, driver: str = "fast") -> None:
    with open(source) as text:
        document = json.load(text)
    for flow in document["flows"]:
        flow["size"] = int(flow["size"])
    setup = time.perf_counter()
    engine = Engine(["simgrid-flows", *CONFIG])
    hosts = platform(engine, document)
    finish = [None] * len(document["flows"])
    {"fast": fast, "per-flow": per_flow}[driver](document, hosts, finish)
    started, cpu = time.perf_counter(), time.process_time()
    engine.run()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    result = {
        "simgrid": simgrid.simgrid_version,
        "driver": driver,
        "finish": finish,
        "wall_s": wall,
        "cpu_s": cpu,
        "setup_s": started - setup,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    with open(target, "w") as out:
        out.write(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:])
