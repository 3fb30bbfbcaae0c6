"""How an operator controls Apache httpd run from the suite's configuration: its command line, and
its graceful restart (the adapters in httpbench.servers.adapters.apache2 take both from here)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

from httpbench.servers.base import Server, Site
from httpbench.servers.operations import Operation, command_refusal

# Apache's graceful restart (https://httpd.apache.org/docs/2.4/stopping.html#graceful): `-k graceful`
# tests the configuration, then has the parent (kept) re-read it and replace each child once it has
# served its request in flight; Debian's `systemctl reload apache2` runs the same, and Apache's
# docs rotate logs with it (https://httpd.apache.org/docs/2.4/logs.html#rotation).
GRACEFUL = "apache2 -k graceful with the suite's -d and -f (a configuration test, then SIGUSR1 to the parent)"
STOPPING = "https://httpd.apache.org/docs/2.4/stopping.html"


class ApacheControl:
    """What every Apache adapter shares to be controlled: mixed into one, before Server."""

    operations = {
        **Server.operations,
        **{
            action: Operation(action, GRACEFUL, "kept", STOPPING)
            for action in ("reload", "graceful-restart", "reopen-logs")
        },
    }

    def operate(self, action: str, site: Site, pid: int) -> Optional[str]:
        return command_refusal(self._control(site.run_dir) + ["-k", "graceful"], self.environment(site))

    def logs(self, site: Site) -> Tuple[Path, ...]:
        return (site.run_dir / "error.log", site.run_dir / "access.log")

    def _control(self, config_dir: Path) -> List[str]:
        """apache2 on the suite's configuration: `-d` so relative paths resolve in the run
        directory, not /etc/apache2."""
        return [self.executable(), "-d", str(config_dir), "-f", str(config_dir / "apache2.conf")]
