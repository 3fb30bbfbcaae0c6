"""Shared pytest setup. The tests exercise the installed package (`pip install .` first), so
that what is tested is what users get, compiled extension included."""
