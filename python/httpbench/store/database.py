"""The results store: every run, cell and round, kept with SQLAlchemy Core in an SQLite file by
default or in PostgreSQL by URL.

Each round is committed the moment it is measured, so a crash or Ctrl-C loses at most the round
in flight, and a resumed run finds exactly which rounds it still owes. Each run records the process
measuring it, so a run whose process died without a word is seen as interrupted. A store of an
older schema gets the columns added since when `run` opens it; the commands that only read read
it as it is, without those columns. A round stays whole (the
engine's report with its histograms and series, the server's monitor window, the flags) in a
JSON column, with its headline figures in columns of their own for querying.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
from pathlib import Path
from typing import Collection, Dict, List, Optional, Set, Tuple

from sqlalchemy import Table, create_engine, delete, event, func, insert, inspect, select, update
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from httpbench.errors import Error
from httpbench.judge.honesty import stops_cell
from httpbench.load.report import stored_host, stored_round
from httpbench.store import owner
from httpbench.store.schema import (
    FILLED,
    SCHEMA_LOCK,
    SCHEMA_VERSION,
    added_since,
    cells,
    meta,
    metadata,
    migrate,
    rounds,
    runs,
)


class StoreError(Error):
    """The store cannot be used; the message is one line saying why and what to do."""


def url_of(db: str, create: bool = True) -> URL:
    """A path or URL as SQLAlchemy wants it: plain postgresql:// uses psycopg 3, and an SQLite
    file's directory is created, or with `create` false the file must exist (SQLite would
    otherwise make an empty one)."""
    url = make_url(db) if "://" in db else URL.create("sqlite", database=db)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    if url.drivername.startswith("sqlite") and url.database not in (None, "", ":memory:"):
        if create:
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        elif not Path(url.database).is_file():
            raise StoreError(
                f"no database at {url.database}: 'httpbench run' makes one; give --db the file or URL it wrote"
            )
    return url


def _shown(db: str) -> str:
    """The database as messages name it: never with its password."""
    try:
        return make_url(db).render_as_string(hide_password=True) if "://" in db else db
    except SQLAlchemyError:
        return db


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def _finite(value):
    """JSON has no NaN or infinity: PostgreSQL refuses them where SQLite would keep them, so both
    store null and a run reads back the same from either."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _dumps(value) -> str:
    return json.dumps(_finite(value), allow_nan=False)


def _headline(m: dict, *path):
    """A figure of the report `m` kept in a column of its own: the report is typed (every object on
    `path` is there), and a figure nobody measured is None."""
    for key in path:
        m = m[key]
    return _finite(m)


def _one_line(method):
    """A database that fails under a store operation (a damaged SQLite file, a lost server) ends
    in one line saying so, not a traceback."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except SQLAlchemyError as e:
            raise StoreError(f"the results database {self.shown} failed: {_reason(e)}; {self.remedy}") from None

    return guarded


def _reason(error: Exception) -> str:
    return str(getattr(error, "orig", None) or error).strip().splitlines()[0]


def _run_as_read(run: dict) -> dict:
    """A stored run as this version reads it: its host in this version's shape, whichever version
    stored it, and the status it has now (owner.as_seen)."""
    return owner.as_seen({**run, "host": stored_host(run["host"])})


def _foreign_keys_on(dbapi_connection, _record) -> None:
    # SQLite ignores foreign keys unless asked, per connection; PostgreSQL always checks them.
    dbapi_connection.execute("PRAGMA foreign_keys = ON")


class Store:
    def __init__(self, db: str, create: bool = True) -> None:
        """Open the results database; `create` makes it and its tables when missing (`run`
        does), otherwise it must hold httpbench results (commands that only read)."""
        shown = self.shown = _shown(db)
        try:
            url = url_of(db, create)
            self.sqlite = url.drivername.startswith("sqlite")
            self.remedy = (
                f"if the file is damaged, salvage what it holds with: sqlite3 {url.database} .recover "
                "| sqlite3 recovered.db, then use --db recovered.db"
                if self.sqlite
                else "see the database server's log"
            )
            # connect_timeout: an unreachable server fails in seconds, not after the OS's TCP timeout.
            args = {"connect_timeout": 5} if url.drivername.startswith("postgresql") else {}
            self.engine: Engine = create_engine(url, connect_args=args, json_serializer=_dumps)
            if url.drivername.startswith("sqlite"):
                event.listen(self.engine, "connect", _foreign_keys_on)
            with self.engine.connect() as conn:
                if create:
                    self._lock_schema(conn)
                # The version is checked before any table is created, so a database written by
                # another httpbench is left exactly as it was.
                version = (
                    conn.execute(select(meta.c.schema_version)).scalar() if inspect(conn).has_table("meta") else None
                )
                if version is not None and version > SCHEMA_VERSION:
                    raise StoreError(
                        f"{shown} holds results in schema version {version}, this httpbench writes "
                        f"version {SCHEMA_VERSION}; use another --db, or the httpbench that wrote it"
                    )
                if version is None and not create:
                    raise StoreError(f"{shown} holds no httpbench results: 'httpbench run --db' writes them")
                self.version = SCHEMA_VERSION if create else version
                # Only `run` migrates: a command that reads reads an older store as it is, so a
                # read-only file, or a role that may only read, can still be shown.
                self.absent = {(c.table.name, c.name) for c in added_since(self.version)}
                if create:
                    metadata.create_all(conn)
                    if version is None:
                        conn.execute(insert(meta).values(schema_version=SCHEMA_VERSION))
                    elif version < SCHEMA_VERSION:
                        migrate(conn, version)
                    conn.commit()
        except (SQLAlchemyError, OSError, ImportError) as e:  # ImportError: a URL for a driver not installed
            reason = _reason(e)
            raise StoreError(
                f"cannot open the results database {shown}: {reason}; check the path or URL "
                "(server running, user, password, database name)"
            ) from None

    def _lock_schema(self, conn) -> None:
        """One `run` at a time reads the schema version and brings the store to this one, in one
        transaction: two opening an older store at once would both migrate it (the second adding
        a column already there), two opening an empty one both create its tables."""
        if self.sqlite:
            conn.exec_driver_sql("BEGIN IMMEDIATE")  # the write lock now, not at the first write
        else:
            conn.execute(select(func.pg_advisory_xact_lock(SCHEMA_LOCK)))

    def _columns(self, *columns) -> list:
        """Those of `columns` this store has."""
        return [c for c in columns if (c.table.name, c.name) not in self.absent]

    def _read(self, table: Table, row) -> dict:
        """A row of `table` with every column this httpbench knows: those an older store lacks
        are absent (None), or what its migration would fill them with."""
        out = {**{c.name: None for c in table.columns}, **row._asdict()}
        for added, (filled, fill) in FILLED.items():
            if added > self.version and filled is table:
                out.update(fill(out))
        return out

    @_one_line
    def check(self) -> None:
        """Refuse a damaged SQLite file before a run measures anything it could not store.
        (PostgreSQL checks its own pages.)"""
        if not self.sqlite:
            return
        with self.engine.connect() as conn:
            problems = [row[0] for row in conn.exec_driver_sql("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise StoreError(f"the results database {self.shown} is damaged ({problems[0]}); {self.remedy}")

    @_one_line
    def start_run(self, plan, host: dict, versions: dict) -> int:
        with self.engine.begin() as conn:
            return conn.execute(
                insert(runs).values(
                    plan_name=plan.name,
                    plan_text=plan.text,
                    host=host,
                    versions=versions,
                    started=_now(),
                    status="running",
                    **owner.of_this_process(),
                )
            ).inserted_primary_key[0]

    @_one_line
    def claim(self, run_id: int) -> None:
        """This process resumes `run_id`: it is running again, and this process owns it."""
        with self.engine.begin() as conn:
            conn.execute(
                update(runs).where(runs.c.id == run_id).values(status="running", ended=None, **owner.of_this_process())
            )

    @_one_line
    def cell(self, run_id: int, cell, config_text: str, server_version: str, tls=None) -> int:
        """The stored cell of `run_id` with `cell.key`, created on first use (resume finds it);
        `tls`: the plan's TlsSettings, for a TLS cell."""
        with self.engine.begin() as conn:
            found = conn.execute(select(cells.c.id).where(cells.c.run_id == run_id, cells.c.key == cell.key)).scalar()
            if found is not None:
                conn.execute(
                    update(cells)
                    .where(cells.c.id == found)
                    .values(
                        config_text=config_text or cells.c.config_text,
                        server_version=server_version,
                        status="running",
                        sessions=func.coalesce(cells.c.sessions, 1) + 1,
                    )
                )
                return found
            return conn.execute(
                insert(cells).values(
                    run_id=run_id,
                    key=cell.key,
                    server=cell.server,
                    profile=cell.profile,
                    workload=cell.workload.label,
                    keep_alive=cell.keep_alive,
                    cpus=cell.cpus,
                    config_text=config_text,
                    server_version=server_version,
                    status="running",
                    sessions=1,
                    budget_requests=cell.budget and cell.budget.requests,
                    budget_seconds=cell.budget and cell.budget.duration,
                    protocol=cell.protocol,
                    tls_key=tls and tls.key,
                    tls_version=tls and tls.version,
                    resumption=cell.resumption,
                    streams=cell.streams,
                    encoding=cell.encoding,
                    idle_connections=cell.idle or None,
                    slow_mode=cell.slow,
                    slow_clients=cell.slow_clients or None,
                    events=cell.events_label or None,
                )
            ).inserted_primary_key[0]

    @_one_line
    def add_round(self, cell_id: int, level: int, index: int, measurement: dict, replace: bool = False) -> None:
        """Store one round, committed at once. Adding a round that is already stored is ignored:
        the first one stays as it was, so a resumed run never duplicates one; with `replace`,
        this one takes its place (the round was measured again, see throughputs' `redo`)."""
        values = dict(
            measurement=measurement,
            requests_per_second=_headline(measurement, "requests", "per_second"),
            completed=_headline(measurement, "requests", "completed"),
            errors_total=_headline(measurement, "errors_total"),
            p50_us=_headline(measurement, "latency", "total", "p50_us"),
            p99_us=_headline(measurement, "latency", "total", "p99_us"),
            client_busy_share=_headline(measurement, "client", "busy_share"),
        )
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(rounds).values(cell_id=cell_id, level=level, round=index, **values))
        except IntegrityError:
            this = (rounds.c.cell_id == cell_id, rounds.c.level == level, rounds.c.round == index)
            with self.engine.begin() as conn:
                stored = conn.execute(select(rounds.c.level, rounds.c.round).where(*this)).first()
                if stored is not None and replace:
                    conn.execute(update(rounds).where(*this).values(**values))
            # Only the unique (cell, level, round) is forgiven; an unknown cell is a caller's bug.
            if stored is None:
                raise

    def rounds_done(self, cell_id: int, redo: Collection[str] = ()) -> Set[Tuple[int, int]]:
        """The (level, round) stored for `cell_id`, but those flagged with a kind in `redo`."""
        return set(self.throughputs(cell_id, redo))

    @_one_line
    def throughputs(self, cell_id: int, redo: Collection[str] = ()) -> Dict[Tuple[int, int], float]:
        """Each stored round of `cell_id`'s requests/s (0 if it has none), by (level, round); but
        those flagged with a kind in `redo`: a round that stopped its cell (its server died) is no
        measurement to keep, so a resumed cell measures it again. Only then are the rounds'
        reports read."""
        read = [rounds.c.level, rounds.c.round, rounds.c.requests_per_second] + ([rounds.c.measurement] if redo else [])
        with self.engine.connect() as conn:
            return {
                (r.level, r.round): r.requests_per_second or 0.0
                for r in conn.execute(select(*read).where(rounds.c.cell_id == cell_id))
                if not redo or not stops_cell(stored_round(r.measurement), redo)
            }

    @_one_line
    def search_again(self, cell_id: int) -> None:
        """A capacity cell's search starts over: the probes an interrupted search stored, and what
        it found so far, go (a search is not resumed halfway: its next rate depends on them all)."""
        with self.engine.begin() as conn:
            conn.execute(delete(rounds).where(rounds.c.cell_id == cell_id))
            conn.execute(update(cells).where(cells.c.id == cell_id).values(capacity=None))

    @_one_line
    def set_capacity(self, cell_id: int, capacity: dict) -> None:
        """What a capacity cell's search found so far (the engine's `capacity` object)."""
        with self.engine.begin() as conn:
            conn.execute(update(cells).where(cells.c.id == cell_id).values(capacity=capacity))

    @_one_line
    def searched(self, run_id: int, key: str) -> bool:
        """Whether the capacity cell `key` of `run_id` finished its search (a resume skips it)."""
        with self.engine.connect() as conn:
            found = conn.execute(
                select(cells.c.status, cells.c.capacity).where(cells.c.run_id == run_id, cells.c.key == key)
            ).first()
        return found is not None and found.status == "done" and found.capacity is not None

    @_one_line
    def finish_cell(self, cell_id: int, status: str, seconds: float, error: Optional[str]) -> None:
        with self.engine.begin() as conn:
            # A resumed cell adds its time to what the interrupted attempt already spent.
            conn.execute(
                update(cells)
                .where(cells.c.id == cell_id)
                .values(status=status, error=error, seconds=func.coalesce(cells.c.seconds, 0) + seconds)
            )

    @_one_line
    def finish_run(self, run_id: int, status: str) -> dt.datetime:
        """The run ends now, with `status`; returns when, as stored."""
        ended = _now()
        with self.engine.begin() as conn:
            conn.execute(update(runs).where(runs.c.id == run_id).values(status=status, ended=ended))
        return ended

    @_one_line
    def runs(self) -> List[dict]:
        with self.engine.connect() as conn:
            counts = dict(conn.execute(select(cells.c.run_id, func.count()).group_by(cells.c.run_id)).all())
            listed = (
                runs.c.id,
                runs.c.plan_name,
                runs.c.status,
                runs.c.started,
                runs.c.ended,
                runs.c.host,
                runs.c.owner_host,
                runs.c.owner_pid,
                runs.c.owner_started,
                runs.c.owner_boot,
            )
            return [
                _run_as_read({**dict.fromkeys(c.name for c in listed), **r._asdict(), "cells": counts.get(r.id, 0)})
                for r in conn.execute(select(*self._columns(*listed)).order_by(runs.c.id))
            ]

    @_one_line
    def run(self, run_id: int) -> dict:
        """A whole run: its cells in the order they were made, each with its rounds."""
        with self.engine.connect() as conn:
            row = conn.execute(select(*self._columns(*runs.columns)).where(runs.c.id == run_id)).first()
            if row is None:
                recent = [str(r.id) for r in conn.execute(select(runs.c.id).order_by(runs.c.id.desc()).limit(5))]
                raise StoreError(
                    f"there is no run {run_id}; recent runs: {', '.join(recent) or 'none'} (httpbench runs lists them)"
                )
            out = self._read(runs, row)
            out["cells"] = []
            for c in conn.execute(
                select(*self._columns(*cells.columns)).where(cells.c.run_id == run_id).order_by(cells.c.id)
            ):
                cell = self._read(cells, c)
                # Each round in this version's shape, whichever version stored it.
                cell["rounds"] = [
                    {**r._asdict(), "measurement": stored_round(r.measurement)}
                    for r in conn.execute(
                        select(rounds.c.level, rounds.c.round, rounds.c.measurement)
                        .where(rounds.c.cell_id == c.id)
                        .order_by(rounds.c.level, rounds.c.round)
                    )
                ]
                out["cells"].append(cell)
            return _run_as_read(out)
