"""The ``httpbench`` command line. It only parses arguments and hands over to the modules that do
the work; a bad command line or engine error ends in one line on stderr and exit code 2."""

import argparse
import sys
from typing import List, NoReturn, Optional

from httpbench import __version__, _engine, doctor


class _Parser(argparse.ArgumentParser):
    """argparse, with its error cut to one line that says where to look."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="httpbench", description="Web-server benchmark suite.")
    parser.add_argument("--version", action="version", version=f"httpbench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # `load` is dispatched before argparse (see main); it is declared here only so that
    # `httpbench --help` lists it.
    commands.add_parser("load", add_help=False,
                        help="generate HTTP load (its options: httpbench load --help)")
    listing = commands.add_parser("servers", help="list the servers under test; 'servers install NAME...' installs them")
    listing.add_argument("action", nargs="?", choices=["install"], help="install the named servers' Debian packages")
    listing.add_argument("names", nargs="*", metavar="NAME")
    listing.set_defaults(run=_servers)
    check = commands.add_parser("doctor", help="check this host's settings for benchmarking")
    check.add_argument("--json", action="store_true", help="print facts and checks as JSON")
    check.set_defaults(run=lambda args: doctor.main(as_json=args.json))
    return parser


def _servers(args: argparse.Namespace) -> int:
    from httpbench.servers import catalog
    if args.action is None:
        return catalog.show()
    if not args.names:
        raise _UsageError("name the servers to install, e.g. 'httpbench servers install nginx lighttpd'")
    return catalog.install(args.names)


class _UsageError(Exception):
    pass


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        # Everything after `load` goes untouched to the Rust parser, so the load flags (and their
        # --help) are defined once, in crates/load.
        if argv[:1] == ["load"]:
            return _engine.load_main(["httpbench load", *argv[1:]])
        args = _parser().parse_args(argv)
        return args.run(args)
    except (_engine.EngineError, _UsageError, ValueError) as e:
        print(f"httpbench: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
