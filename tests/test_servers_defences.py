"""The tuned profiles' defences against slow clients (docs/servers-defences.md), on real servers:
a slowloris, a request header sent a few bytes a second and never finished, is cut by the tuned
server within its configured limit while the same server in its default profile still holds its
own. Both run at once, so the test takes the tuned limit (10 s) and not the default's."""

import select
import socket
import time

import pytest
from conftest import make_site
from httpbench import servers
from httpbench.servers import ServerProfile, start

# server -> (tuned's limit on a request header, the default's), in seconds: apache2-event's
# mod_reqtimeout header=10-20 against Debian's header=20-40 (a trickle of a few bytes a second
# earns no extension at MinRate=500); nginx's client_header_timeout 10s against its 60s.
LIMITS = {"apache2-event": (10, 20), "nginx": (10, 60)}
# How long past the tuned limit the test waits for the cut: generous, for a loaded machine.
MARGIN = 8.0


class Slowloris:
    """One connection sending a request header a line at a time, never its end."""

    def __init__(self, site) -> None:
        self.sock = socket.create_connection((site.host, site.port), timeout=5)
        self.sock.sendall(b"GET /index.html HTTP/1.1\r\nHost: localhost\r\n")
        self.opened = time.monotonic()
        self.closed_after = None  # seconds from opening to the server's close, once seen

    def trickle(self) -> None:
        """One more header line, as slowhttptest sends them; a reset connection counts as cut."""
        if self.closed_after is None:
            try:
                self.sock.sendall(b"X-a: b\r\n")
            except OSError:
                self.closed_after = time.monotonic() - self.opened

    def watch(self) -> None:
        """Read what the server sent (a 408, say); its end of stream is the cut."""
        while self.closed_after is None and select.select([self.sock], [], [], 0)[0]:
            try:
                data = self.sock.recv(4096)
            except OSError:
                data = b""
            if not data:
                self.closed_after = time.monotonic() - self.opened


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_tuned_cuts_a_slowloris_its_default_still_holds(tmp_path, name):
    adapter = servers.get(name)
    if not adapter.installed():
        pytest.fail(f"{name} is not installed: {adapter.install_command()}")
    tuned_limit, default_limit = LIMITS[name]
    default_site = make_site(tmp_path, "www-default", "run-default")
    tuned_site = make_site(tmp_path, "www-tuned", "run-tuned")
    with start(adapter, default_site, ServerProfile()), start(adapter, tuned_site, ServerProfile("tuned")):
        on_default, on_tuned = Slowloris(default_site), Slowloris(tuned_site)
        try:
            deadline = time.monotonic() + tuned_limit + MARGIN
            while on_tuned.closed_after is None and time.monotonic() < deadline:
                time.sleep(1.0)
                for slow in (on_default, on_tuned):
                    slow.watch()
                    slow.trickle()
            on_default.watch()
            bound = tuned_limit + MARGIN
            assert on_tuned.closed_after is not None, f"{name}/tuned still held a slowloris after {bound} s"
            # The default's limit is 10 s or more later: it holds its slowloris still.
            assert on_default.closed_after is None, (
                f"{name}/default cut its slowloris after {on_default.closed_after:.1f} s, "
                f"before its {default_limit} s limit"
            )
        finally:
            on_default.sock.close()
            on_tuned.sock.close()
