"""How a sweep stops short of its end on purpose."""


class Stopped(Exception):
    """The run stopped before its end, its measured rounds all stored: a client host was lost
    under --on-client-loss stop, none is left, or the scheduler was lost. `httpbench run
    --resume` goes on from there."""
