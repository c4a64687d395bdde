"""SimGrid's side of ``bench/engine_vs_simgrid.py``: run with the system ``python3`` that has
SimGrid's Python bindings (Debian's ``python3-simgrid``), as
``python3 _simgrid_flows.py IN.json OUT.json``.

IN.json is a flow file (see ``burstlake/replay/flows.py``) whose flows also name a source and
destination host (``src``, ``dst``). The platform is one Full zone: those hosts, the links at
their bandwidth with latency 0, and each flow's route from its source to its destination. The
network model is CM02 (max-min sharing) with TCP-gamma 0 and no cross traffic, the same model
as the burstlake solver. One actor starts each flow at its start time (``Comm.sendto_async``);
OUT.json gets each flow's finish time, the wall time of ``Engine.run`` and the peak RSS.
"""

import json
import resource
import sys
import time

import simgrid
from simgrid import Comm, Engine, LinkInRoute, NetZone, this_actor

CONFIG = [
    "--cfg=network/model:CM02",
    "--cfg=network/TCP-gamma:0",
    "--cfg=network/crosstraffic:0",
    "--cfg=maxmin/precision:1e-9",
    "--cfg=surf/precision:1e-12",
    "--log=root.thres:critical",
]


def main(source: str, target: str) -> None:
    with open(source) as text:
        document = json.load(text)
    setup = time.perf_counter()
    engine = Engine(["simgrid-flows", *CONFIG])
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
    order = sorted(range(len(document["flows"])), key=lambda k: document["flows"][k]["start"])
    comms = [None] * len(order)

    def launcher() -> None:
        for k in order:
            flow = document["flows"][k]
            this_actor.sleep_until(flow["start"])
            src, dst = hosts[flow["src"]], hosts[flow["dst"]]
            comms[k] = Comm.sendto_async(src, dst, int(flow["size"]))
        Comm.wait_all([c for c in comms])

    first = next(iter(hosts.values()))
    first_host = engine.host_by_name(first.name)
    from simgrid import Actor

    Actor.create("launcher", first_host, launcher)
    started, cpu = time.perf_counter(), time.process_time()
    engine.run()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    result = {
        "simgrid": simgrid.simgrid_version,
        "finish": [c.finish_time for c in comms],
        "wall_s": wall,
        "cpu_s": cpu,
        "setup_s": started - setup,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    with open(target, "w") as out:
        out.write(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
