"""The ``httpbench`` command line. It only parses arguments and hands over to the modules that do
the work; a bad command line or engine error ends in one line on stderr and exit code 2."""

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import List, NoReturn, Optional, Sequence

from httpbench import __version__, _engine
from httpbench.cli import doctor, log_load
from httpbench.errors import Error


class _Parser(argparse.ArgumentParser):
    """argparse, with its error cut to one line that says where to look."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")


def _command(commands, name: str, help: str, examples: Sequence[str], **kwargs) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with examples, as hyperfine's and k6's do."""
    return commands.add_parser(
        name,
        help=help,
        epilog="examples:\n" + "\n".join(f"  {e}" for e in examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **kwargs,
    )


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="httpbench", description="Web-server benchmark suite.")
    parser.add_argument("--version", action="version", version=f"httpbench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # `load` is dispatched before argparse (see main); it is declared here only so that
    # `httpbench --help` lists it.
    commands.add_parser("load", add_help=False, help="generate HTTP load (its options: httpbench load --help)")
    listing = _command(
        commands,
        "servers",
        "list the servers under test; 'servers install NAME...' installs them",
        ["httpbench servers", "httpbench servers install nginx lighttpd"],
    )
    listing.add_argument("action", nargs="?", choices=["install"], help="install the named servers' Debian packages")
    listing.add_argument("names", nargs="*", metavar="NAME")
    listing.set_defaults(run=_servers)
    run = _command(
        commands,
        "run",
        "sweep a plan (default: quick) and store every round",
        [
            "httpbench run",
            "httpbench run seed-2011 --servers nginx,apache2-event --server-cpus 0",
            "httpbench run my-plan.toml --db postgresql://user@host/bench",
            "httpbench run --resume 3                  # finish run 3, stopped by Ctrl-C or a crash",
        ],
    )
    run.add_argument("plan", nargs="?", help="a built-in plan (see 'httpbench plans') or a plan file")
    run.add_argument("--servers", help="only these servers, comma-separated")
    run.add_argument("--server-cpus", help="CPUs for the server, e.g. 0 or 0-3 (default: the first)")
    run.add_argument("--client-cpus", help="CPUs for the client (default: all the others)")
    run.add_argument("--allow-shared-cpus", action="store_true", help="let server and client share CPUs")
    _db_arg(run)
    run.add_argument("--resume", type=int, metavar="RUN", help="finish an interrupted run")
    run.add_argument(
        "--cluster",
        metavar="SCHEDULER",
        help="load from the client workers of this Dask scheduler "
        "(tls://HOST:PORT) and run servers on its server worker",
    )
    run.add_argument("--certs", type=Path, help="the folder 'httpbench cluster certs' made (for tls://)")
    run.add_argument(
        "--on-client-loss",
        choices=("continue", "stop"),
        default="continue",
        help="when a client host is lost mid-level: store the level as partial and go on, or stop",
    )
    run.set_defaults(run=_run)
    runs = _command(
        commands, "runs", "list stored runs", ["httpbench runs", "httpbench runs --db postgresql://user@host/bench"]
    )
    _db_arg(runs)
    runs.set_defaults(run=_runs)
    show = _command(
        commands,
        "show",
        "print a stored run: every level, its flags, who won",
        ["httpbench show 3", "httpbench show 3 --db results.db | less"],
    )
    show.add_argument("run_id", type=int, metavar="RUN", help="a stored run ('httpbench runs' lists them)")
    _db_arg(show)
    show.set_defaults(run=_show)
    report = _command(
        commands,
        "report",
        "write a self-contained HTML report of stored runs",
        ["httpbench report 3", "httpbench report 3 4 -o report.html --baseline nginx"],
    )
    _runs_args(report)
    report.add_argument(
        "-o",
        "--output",
        help="the HTML file (default: report-run-N.html next to an SQLite database, else in httpbench-results/)",
    )
    _chart_args(report)
    report.set_defaults(run=_report)
    plot = _command(
        commands,
        "plot",
        "write every chart of stored runs as PNG or SVG files",
        ["httpbench plot 3 -o charts/", "httpbench plot 3 4 --format svg --level 100 -o charts/"],
    )
    _runs_args(plot)
    plot.add_argument("--format", choices=("png", "svg"), default="png")
    plot.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to write them to")
    _chart_args(plot)
    plot.set_defaults(run=_plot)
    export = _command(
        commands,
        "export",
        "print stored runs as CSV, JSON or Markdown tables",
        [
            "httpbench export 3",
            "httpbench export 3 --format csv > levels.csv",
            "httpbench export 3 4 --format json -o runs.json",
        ],
    )
    _runs_args(export)
    export.add_argument("--format", choices=("csv", "json", "markdown"), default="markdown")
    export.add_argument("-o", "--output", help="a file to write (default: standard output)")
    export.set_defaults(run=_export)
    compare = _command(
        commands,
        "compare",
        "compare two stored runs level by level",
        ["httpbench compare 3 4", "httpbench compare 3 4 --fail-on-regression 5%   # in CI"],
    )
    compare.add_argument("before", type=int, metavar="RUN_A", help="the run compared against")
    compare.add_argument("after", type=int, metavar="RUN_B", help="the run whose changes are shown")
    _db_arg(compare)
    compare.add_argument(
        "--fail-on-regression",
        metavar="PERCENT",
        help="exit 1 if any level's throughput fell by more than this (e.g. 5%%) beyond the noise",
    )
    compare.set_defaults(run=_compare)
    worker = _command(
        commands,
        "worker",
        "serve as a Dask worker of a benchmark cluster (client or server host)",
        [
            "httpbench worker --scheduler tls://SCHED:8786 --role client --certs certs/",
            "httpbench worker --scheduler tls://SCHED:8786 --role server --certs certs/",
        ],
    )
    worker.add_argument("--scheduler", required=True, help="tls://HOST:PORT (or tcp:// on loopback only)")
    worker.add_argument("--role", required=True, choices=("client", "server"))
    worker.add_argument("--certs", type=Path, help="the folder 'httpbench cluster certs' made (required for tls://)")
    worker.add_argument("--name", help="how results name this host (default: hostname-role)")
    worker.add_argument(
        "--listen", help="the address to listen on (default: this host's address towards the scheduler)"
    )
    worker.set_defaults(run=_worker)
    cluster = _command(
        commands,
        "cluster",
        "the benchmark cluster: certificates and the scheduler",
        ["httpbench cluster certs certs/", "httpbench cluster scheduler --address tls://0.0.0.0:8786 --certs certs/"],
    )
    parts = cluster.add_subparsers(dest="action", required=True, metavar="ACTION")
    certs = _command(
        parts,
        "certs",
        "make a CA and the scheduler, worker and client certificates (0600)",
        ["httpbench cluster certs certs/", "httpbench cluster certs certs/ --force   # a new CA"],
    )
    certs.add_argument("directory", type=Path, help="a new or empty directory")
    certs.add_argument(
        "--force",
        action="store_true",
        help="write into a directory that is not empty, replacing the certificates there",
    )
    certs.set_defaults(run=lambda a: print("\n".join(map(str, _cluster().make_certs(a.directory, force=a.force)))) or 0)
    scheduler = _command(
        parts,
        "scheduler",
        "run the Dask scheduler",
        [
            "httpbench cluster scheduler --address tls://0.0.0.0:8786 --certs certs/",
            "httpbench cluster scheduler --address tcp://127.0.0.1:8786   # loopback only",
        ],
    )
    scheduler.add_argument("--address", default="tls://0.0.0.0:8786", help="where to listen (default: %(default)s)")
    scheduler.add_argument("--certs", type=Path)
    scheduler.set_defaults(run=lambda a: _cluster().run_scheduler(a.address, a.certs))
    listed = _command(
        commands,
        "plans",
        "list the built-in plans, one line each",
        ["httpbench plans", "httpbench run seed-2016   # one of them"],
    )
    listed.set_defaults(run=_plans)
    check = _command(
        commands,
        "doctor",
        "check this host's settings for benchmarking",
        ["httpbench doctor", "httpbench doctor --json"],
    )
    check.add_argument("--json", action="store_true", help="print facts and checks as JSON")
    check.set_defaults(run=lambda args: doctor.main(as_json=args.json))
    return parser


DEFAULT_DB = "httpbench-results/results.db"


def _runs_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_ids", type=int, nargs="+", metavar="RUN", help="stored runs ('httpbench runs' lists them)")
    _db_arg(parser)


def _db_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default=DEFAULT_DB,
        help=f"the results: an SQLite file (or sqlite:/// URL), or a postgresql:// URL (default: {DEFAULT_DB})",
    )


def _chart_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baseline",
        metavar="SERVER",
        help="the server (or server/profile) rated 100 (default: the plan's baseline, else the first server)",
    )
    parser.add_argument(
        "--level",
        type=int,
        help="the level whose percentile spectrum and timeline are drawn (default: each cell's highest)",
    )


def _load(args: argparse.Namespace):
    from httpbench import results
    from httpbench.store.database import Store

    store = Store(args.db, create=False)
    return [results.load(store, run_id) for run_id in dict.fromkeys(args.run_ids)]


def _choices(args: argparse.Namespace):
    from httpbench.report.charts import Choices

    return Choices(baseline=args.baseline, level=args.level)


def _cluster():
    from httpbench import cluster

    return cluster


def _worker(args: argparse.Namespace) -> int:
    why = _cluster().run_worker(args.scheduler, args.role, args.certs, args.name, args.listen)
    sys.stdout.flush()
    print(f"httpbench: {why}", file=sys.stderr, flush=True)
    # The last line: distributed's teardown against a scheduler already gone can print tracebacks
    # after it (a bare TimeoutError, seen in CI), news to nobody.
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, sys.stdout.fileno())
    os.dup2(quiet, sys.stderr.fileno())
    return 1


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from httpbench.cli import console
    from httpbench.report import output

    runs = _load(args)
    path = Path(args.output) if args.output else console.report_path(args.db, [r.id for r in runs])
    print(output.write_html(runs, path, _choices(args)))
    return 0


def _plot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from httpbench.report import output

    if Path(args.output).exists() and not Path(args.output).is_dir():
        raise _UsageError(f"-o {args.output} is a file: plot writes a folder of charts; give a folder")
    for path in output.write_charts(_load(args), Path(args.output), args.format, _choices(args)):
        print(path)
    return 0


def _export(args: argparse.Namespace) -> int:
    from httpbench import export

    text = export.render(_load(args), args.format)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def _compare(args: argparse.Namespace) -> int:
    from httpbench import results
    from httpbench.cli import console
    from httpbench.results import compare
    from httpbench.store.database import Store

    threshold = compare.parse_threshold(args.fail_on_regression) if args.fail_on_regression else None
    store = Store(args.db, create=False)
    comparison = compare.compare(results.load(store, args.before), results.load(store, args.after))
    return console.comparison(comparison, threshold)


def _run(args: argparse.Namespace) -> int:
    from httpbench.cli import console
    from httpbench.sweep.session import Session, Setup

    if args.plan and args.resume is not None:
        raise _UsageError("--resume continues a stored run with its own plan; drop the plan argument")
    if args.cluster and args.client_cpus:
        raise _UsageError(
            "--client-cpus does not apply with --cluster: each client host's engine uses that host's own CPUs"
        )
    only = None
    if args.servers is not None:
        only = [name.strip() for name in args.servers.split(",") if name.strip()]
        if not only:
            raise _UsageError(
                "--servers names no server: give them comma-separated (e.g. --servers nginx,lighttpd; "
                "'httpbench servers' lists them), or drop it to run every installed one"
            )
    setup = Setup(
        args.server_cpus, args.client_cpus, args.allow_shared_cpus, args.cluster, args.certs, args.on_client_loss
    )
    return console.run(Session(args.db, args.plan, args.resume, only, setup))


def _runs(args: argparse.Namespace) -> int:
    from httpbench.cli import console
    from httpbench.store.database import Store

    console.runs_table(Store(args.db, create=False).runs(), args.db)
    return 0


def _show(args: argparse.Namespace) -> int:
    from httpbench import results
    from httpbench.cli import console
    from httpbench.store.database import Store

    console.show(results.load(Store(args.db, create=False), args.run_id), args.db)
    return 0


def _plans(args: argparse.Namespace) -> int:
    from httpbench.plan import builtin

    return builtin.print_builtin()


def _servers(args: argparse.Namespace) -> int:
    from httpbench.servers import catalog

    if args.action is None:
        return catalog.show()
    if not args.names:
        raise _UsageError("name the servers to install, e.g. 'httpbench servers install nginx lighttpd'")
    return catalog.install(args.names)


class _UsageError(Error):
    pass


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        # Everything after `load` goes untouched to the Rust parser, so the load flags (and their
        # --help) are defined once, in crates/load.
        if argv[:1] == ["load"]:
            flags, mix = log_load.with_log_mix(argv[1:])
            try:
                return _engine.load_main(["httpbench load", *flags])
            finally:
                if mix is not None:
                    mix.unlink()
        args = _parser().parse_args(argv)
        return args.run(args)
    except Error as e:
        # Something the user can fix, said in one line; anything else is a bug, with its traceback.
        print(f"httpbench: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        return getattr(e, "exit_code", 130)  # 143 when it was SIGTERM (session.Terminated)
    except BrokenPipeError:
        # The reader left (`httpbench show 3 | head`): end quietly, with the status of SIGPIPE
        # as other Unix tools do; Python would complain again flushing stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except OSError as e:  # a file that cannot be written, a folder that is not there
        print(f"httpbench: {e.filename}: {e.strerror}" if e.filename else f"httpbench: {e}", file=sys.stderr)
        return 2
