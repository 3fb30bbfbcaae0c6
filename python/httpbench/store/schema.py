"""The store's tables, version by version, and the migration of a store of an older version:
a version only ever adds columns, each listed here with what it holds for rows stored before."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    select,
    text,
    update,
)
from sqlalchemy.schema import CreateColumn

SCHEMA_VERSION = 10

metadata = MetaData()
meta = Table("meta", metadata, Column("schema_version", Integer, nullable=False))
runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("plan_name", String(200), nullable=False),
    Column("plan_text", Text, nullable=False),
    Column("host", JSON, nullable=False),
    Column("versions", JSON, nullable=False),
    Column("started", DateTime, nullable=False),
    Column("ended", DateTime),
    Column("status", String(20), nullable=False),
    # The process measuring the run: a "running" run whose process is gone was interrupted.
    Column("owner_host", String(255)),
    Column("owner_pid", Integer),
    # The process's start in clock ticks after its host's boot, and that boot's id: pids are
    # reused, and a start in wall-clock seconds moves when the clock is stepped.
    Column("owner_started", Float),
    Column("owner_boot", String(36)),
)
cells = Table(
    "cells",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("run_id", ForeignKey("runs.id"), nullable=False),
    Column("key", String(300), nullable=False),
    Column("server", String(100), nullable=False),
    Column("profile", String(20), nullable=False),
    Column("workload", String(200), nullable=False),
    Column("keep_alive", Boolean, nullable=False),
    Column("cpus", Integer, nullable=False),
    Column("config_text", Text, nullable=False),
    Column("server_version", String(300), nullable=False),
    Column("seconds", Float),
    Column("status", String(20), nullable=False),
    Column("error", Text),
    Column("sessions", Integer),  # how many times the cell was started: more than 1 when resumed
    # The cell's own budget, when its plan sweeps several (plan.Cell.budget); null: the plan's one.
    Column("budget_requests", BigInteger),
    Column("budget_seconds", Float),
    # How the cell was spoken to (plan.Cell): "http" or "https"; for TLS, the plan's key type and
    # pinned version (null: negotiated), and without keep-alive its handshakes' resumption.
    Column("protocol", String(20)),
    Column("tls_key", String(20)),
    Column("tls_version", String(10)),
    Column("resumption", String(20)),
    # Streams each connection kept open at once: an HTTP/2 cell's ("h2", "h2c"); 1 for HTTP/1.1.
    Column("streams", Integer),
    # A capacity plan's cell: the search's result, the engine's `capacity` object (its objective,
    # rate, interval, limit and every probe); null for a cell measured at levels, and until the
    # search has a first probe.
    Column("capacity", JSON),
    # The content coding every request asked (Accept-Encoding: "identity", "gzip", "br"); null:
    # no such header, as every cell before the plan's accept_encoding axis.
    Column("encoding", String(20)),
    # Clients beside the load that are not a benchmark (plan.Cell): keep-alive connections held
    # idle, and the slow clients' mode ("headers", "body", "read") and count; null: none, as every
    # cell before the plan's idle_connections and slow axes.
    Column("idle_connections", Integer),
    Column("slow_mode", String(20)),
    Column("slow_clients", Integer),
    # The plan's events performed on the server during each level (plan.model.events_label:
    # "reload@2s+2sx5"); null: none, as every cell before the plan's [[event]] list.
    Column("events", String(500)),
    UniqueConstraint("run_id", "key"),
)
rounds = Table(
    "rounds",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("cell_id", ForeignKey("cells.id"), nullable=False),
    Column("level", Integer, nullable=False),
    Column("round", Integer, nullable=False),
    Column("requests_per_second", Float),
    Column("completed", BigInteger),  # a long round at a few million requests/s passes 2**31
    Column("errors_total", BigInteger),
    Column("p50_us", Integer),
    Column("p99_us", Integer),
    Column("client_busy_share", Float),
    Column("measurement", JSON, nullable=False),
    UniqueConstraint("cell_id", "level", "round"),
)
# The columns each schema version added; an older store gets them when this httpbench opens it.
ADDED = {
    2: [runs.c.owner_host, runs.c.owner_pid, runs.c.owner_started, cells.c.sessions],
    3: [runs.c.owner_boot],
    4: [cells.c.budget_requests, cells.c.budget_seconds],
    5: [cells.c.protocol, cells.c.tls_key, cells.c.tls_version, cells.c.resumption],
    6: [cells.c.streams],
    7: [cells.c.capacity],
    8: [cells.c.encoding],
    9: [cells.c.idle_connections, cells.c.slow_mode, cells.c.slow_clients],
    10: [cells.c.events],
}


# Held while a `run` reads the schema version and migrates (PostgreSQL's advisory lock, this
# database's only): any number, as long as it is always this one.
SCHEMA_LOCK = 0x68747470


def budget_of_key(cell: dict) -> dict:
    """Version 4's budget columns, for a cell stored before: a cell's own budget was only in its
    key's last part, as plan.Budget.label wrote it ("n100", "2s")."""
    parts = cell["key"].split("/")
    if len(parts) <= 5:
        return {}
    label = parts[5]
    return {"budget_requests": int(label[1:])} if label.startswith("n") else {"budget_seconds": float(label[:-1])}


# What the columns a version added hold for a row stored before, where that can be told from the
# row: the table, and a function of the row giving their values. A migration stores them, and a
# command reading an older store without migrating it reads them so.
# Before version 6 every cell was HTTP/1.1: one request at a time per connection.
FILLED = {
    4: (cells, budget_of_key),
    5: (cells, lambda cell: {"protocol": "http"}),
    6: (cells, lambda cell: {"streams": 1}),
}


def added_since(version: int) -> list:
    return [column for added in range(version + 1, SCHEMA_VERSION + 1) for column in ADDED[added]]


def migrate(conn, version: int) -> None:
    """Bring a store of an older schema `version` to this one: its columns added and filled,
    nothing lost."""
    for column in added_since(version):
        conn.execute(
            text(f"ALTER TABLE {column.table.name} ADD COLUMN {CreateColumn(column).compile(dialect=conn.dialect)}")
        )
    for table, fill in (FILLED[added] for added in sorted(FILLED) if added > version):
        for row in conn.execute(select(table)).mappings().all():
            values = fill(row)
            if values:
                conn.execute(update(table).where(table.c.id == row["id"]).values(**values))
    conn.execute(update(meta).values(schema_version=SCHEMA_VERSION))
