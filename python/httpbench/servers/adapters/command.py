"""Any other server, given as a command line that runs it in the foreground: how a user benchmarks
OpenLiteSpeed, G-WAN, Cherokee or their own server, which Debian does not package.

    CommandServer("/opt/gwan/gwan -d:{run_dir} -p {port}", name="gwan")

`{port}`, `{host}`, `{docroot}`, `{run_dir}` and `{workers}` in the command are filled in, and for
HTTPS `{cert}`, `{key}` and `{ca}` (the site's certificate, its key, the suite's authority). A
command with `{php_socket}` runs PHP: the suite starts its PHP-FPM pool on that Unix socket first,
and the server is to pass `.php` requests to it by FastCGI. The
filled command line is the rendered configuration (`command.txt`), so what is stored with the
results is exactly what ran. Discovery skips this class (it sets `name` per instance, not on the
class), since it cannot be made without a command: plans construct it themselves.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from pathlib import Path
from typing import List, Optional

from httpbench.servers.base import Config, Server, ServerProfile, Site, SiteTLS, fill


class CommandServer(Server):
    summary = "any server, run from a command line"
    speaks_tls = True  # when its command takes the certificate: see tls_refusal
    # Whatever the command offers: verification proves it spoke h2 when a site offers HTTP/2.
    speaks_h2 = True
    speaks_h2c = True

    def __init__(self, command: str, name: str = "command") -> None:
        words = shlex.split(command)
        if not words:
            raise ValueError("the server command is empty")
        self.command_template = command
        self.name = name
        self.program = words[0]
        self.runs_php = "fastcgi" if "{php_socket}" in command else None

    def install_command(self) -> str:
        return f"install {self.program} yourself, or give its full path in the command"

    def version_args(self) -> List[str]:
        return ["--version"]

    def tls_refusal(self, tls: Optional[SiteTLS] = None) -> Optional[str]:
        if "{cert}" not in self.command_template or "{key}" not in self.command_template:
            return (
                f"{self.name}'s command has no {{cert}} and {{key}} placeholders, so it cannot be given the "
                "suite's certificate; add them where the server takes its certificate and key files"
            )
        return None

    def php_refusal(self) -> Optional[str]:
        if self.runs_php is None:
            return (
                f"{self.name}'s command has no {{php_socket}} placeholder, so it cannot be given the suite's "
                "PHP-FPM pool; add it where the server takes its FastCGI socket"
            )
        return super().php_refusal()

    def version(self) -> Optional[str]:
        """`PROGRAM --version`'s first line if it answers that at once and cleanly, else
        "command: PROGRAM". A server that ignores --version would start serving, so it runs in a
        session of its own and the whole session is killed after a few seconds."""
        exe = self.executable()
        if exe is None:
            return None
        fallback = f"{self.name}: {self.program}"
        try:
            proc = subprocess.Popen(
                [exe, *self.version_args()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        except OSError:
            return fallback
        try:
            out, _ = proc.communicate(timeout=3)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.stdout.close()  # not read to the end: a detached child may still hold it open
            proc.wait()
            return fallback
        lines = out.strip().splitlines()
        return lines[0].strip() if proc.returncode == 0 and lines else fallback

    def render(self, site: Site, profile: ServerProfile) -> Config:
        # Directives are extra arguments, appended: the only thing a command line can take.
        # Split first, then fill, so a document root with a space stays one argument.
        words = [fill(word, site) for word in shlex.split(self.command_template)]
        words += [word for directive in profile.directives for word in shlex.split(directive)]
        # The server runs in the run directory: a relative program path is made absolute here.
        if "/" in words[0] and not os.path.isabs(words[0]):
            words[0] = os.path.abspath(words[0])
        return Config({"command.txt": shlex.join(words) + "\n"})

    def command(self, site: Site, config_dir: Path) -> List[str]:
        # Run what command.txt says, so a profile's config_file (a command line of its own) counts.
        return shlex.split((config_dir / "command.txt").read_text())
