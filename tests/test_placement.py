"""CPU placement of server and client."""

import pytest
from httpbench.placement import Placement, PlacementError, parse_cpus

FOUR = (0, 1, 2, 3)


def test_lists_and_ranges():
    assert parse_cpus("0") == (0,)
    assert parse_cpus("0,2-3") == (0, 2, 3)
    for bad in ("", "a", "3-1", "-1", "1-"):
        with pytest.raises(PlacementError, match="not a CPU list"):
            parse_cpus(bad)


def test_default_server_first_cpu_client_the_rest():
    p = Placement.choose(None, available=FOUR)
    assert (p.server, p.client, p.shared) == ((0,), (1, 2, 3), False)
    p = Placement.choose("0-1", available=FOUR)
    assert p.client == (2, 3)


def test_overlap_refused_unless_allowed():
    with pytest.raises(PlacementError, match="share CPU 1"):
        Placement.choose("0-1", "1-2", available=FOUR)
    assert Placement.choose("0-1", "1-2", allow_shared=True, available=FOUR).shared


def test_server_taking_every_cpu_needs_sharing():
    with pytest.raises(PlacementError, match="none for the client"):
        Placement.choose("0-3", available=FOUR)
    p = Placement.choose("0-3", allow_shared=True, available=FOUR)
    assert p.client == FOUR and p.shared


def test_unavailable_cpu_is_named():
    with pytest.raises(PlacementError, match="CPU 7"):
        Placement.choose("7", available=FOUR)
