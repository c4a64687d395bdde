"""Hostlist expansion and compression (Slurm's grammar) and the natural node order."""

from __future__ import annotations

import random

import pytest

from burstlake.jobs.ingest.hostlist import compress, count, expand, natural_key


def test_expands_a_zero_padded_range_as_sacct_prints_it():
    nodes = expand("nid0[5301-5428]")
    assert len(nodes) == 128
    assert nodes[0] == "nid05301" and nodes[1] == "nid05302" and nodes[-1] == "nid05428"


@pytest.mark.parametrize(
    ("expr", "nodes"),
    [
        ("cn[001-004,010]", ["cn001", "cn002", "cn003", "cn004", "cn010"]),
        ("cn[001-004,010],gpu7", ["cn001", "cn002", "cn003", "cn004", "cn010", "gpu7"]),
        ("rack[1-2]-node[01-02]", ["rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"]),
        ("cn[9-11]", ["cn9", "cn10", "cn11"]),
        ("n[08-10]", ["n08", "n09", "n10"]),
        ("cn5", ["cn5"]),
        ("gpu[2,1]", ["gpu2", "gpu1"]),
        (" login1 , cn[1-2] ", ["login1", "cn1", "cn2"]),
        ("", []),
        (None, []),
        ("None assigned", []),
        ("(null)", []),
    ],
)
def test_expands(expr, nodes):
    assert expand(expr) == nodes
    assert count(expr) == len(nodes)


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("cn[1-3", r"'\[' is never closed"),
        ("cn1-3]", r"'\]' at character 6 closes nothing"),
        ("cn[1-[2]]", r"nested '\[' at character 6"),
        ("cn[3-1]", r"range '3-1' runs backwards"),
        ("cn[a-b]", r"'a-b' in \[a-b\] is not N or N-M"),
        ("cn[]", r"'' in \[\] is not N or N-M"),
        ("cn[1,,2]", r"'' in \[1,,2\] is not N or N-M"),
        ("cn1,,cn2", "empty host name between commas"),
        ("cn 1", "' ' cannot be part of a host name"),
        ("cn[0-9999999]", "expands to over 1000000 hosts"),
        ("a[0-999]b[0-999]c[0-9]", "expands to over 1000000 hosts"),
        ("a[0-600000],b[0-600000]", "expands to over 1000000 hosts"),
    ],
)
def test_malformed_expressions_raise_precise_errors(expr, message):
    with pytest.raises(ValueError, match=message):
        expand(expr)
    with pytest.raises(ValueError, match=message):
        count(expr)


@pytest.mark.parametrize(
    ("nodes", "expr"),
    [
        (["cn010", "cn001", "cn003", "cn002", "cn004", "gpu7"], "cn[001-004,010],gpu7"),
        ([f"nid{n:05d}" for n in range(5301, 5429)], "nid[05301-05428]"),
        (["cn5", "cn5", "login"], "cn5,login"),
        (["cn1", "cn2", "cn3", "cn7"], "cn[1-3,7]"),
        ([], ""),
    ],
)
def test_compresses(nodes, expr):
    assert compress(nodes) == expr


def test_compress_round_trips_to_the_sorted_set():
    rng = random.Random(4)
    names = [f"cn{rng.randrange(1, 3000):04d}" for _ in range(500)]
    names += [f"gpu{rng.randrange(1, 40)}" for _ in range(30)] + ["login", "rack1-node07"]
    assert expand(compress(names)) == sorted(set(names), key=natural_key)


def test_natural_order_is_prefix_then_number():
    assert sorted(["cn10", "cn2", "cn1", "gpu1", "cn010"], key=natural_key) == [
        "cn1",
        "cn2",
        "cn010",
        "cn10",
        "gpu1",
    ]
    assert sorted(["rack2-node1", "rack1-node10", "rack1-node2"], key=natural_key) == [
        "rack1-node2",
        "rack1-node10",
        "rack2-node1",
    ]
