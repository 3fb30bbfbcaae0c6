"""Node.js, Debian's nodejs, running a small static server of ours (node_static.js, shipped beside
this module) that holds the whole document root in memory: what a Node shop would write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

from httpbench.servers.base import Config, Server, ServerProfile, Site

SCRIPT = Path(__file__).with_name("node_static.js")


class Node(Server):
    name = "node"
    summary = "Node.js http module, files held in memory; tuned: one cluster worker per core"
    packages = ("nodejs",)
    program = "node"
    speaks_tls = True  # the https module
    # the http2 module: h2 by ALPN beside HTTP/1.1 over TLS, h2c by prior knowledge without
    speaks_h2 = True
    speaks_h2c = True

    def version_args(self) -> List[str]:
        return ["--version"]

    def version(self):
        v = super().version()
        return v and f"node {v}"

    def render(self, site: Site, profile: ServerProfile) -> Config:
        return Config({"node.json": render_json(site, profile)})

    def command(self, site: Site, config_dir: Path) -> List[str]:
        return [self.executable(), str(SCRIPT), "--config", str(config_dir / "node.json")]


def render_json(site: Site, profile: ServerProfile) -> str:
    """node_static.js's settings. `server` holds http(s).Server properties; directives add to it as
    `NAME=VALUE` (or `NAME VALUE`), e.g. `headersTimeout=10000`."""
    settings = {"host": site.host, "port": site.port, "root": str(site.docroot), "workers": 1, "server": {}}
    if profile.name == "tuned":
        settings["workers"] = site.workers  # cluster: one process per core given (the 2016 write-up)
        if not site.http2:  # Node's http2 server keeps idle sessions open (no timeout) already
            settings["server"]["keepAliveTimeout"] = 60000  # the 2016 write-up's keep-alive 60 s (Node's default: 5 s)
            # Slow clients, from Node's http docs (https://nodejs.org/docs/latest-v20.x/api/http.html,
            # server.headersTimeout and server.requestTimeout): the whole header within 10 s (default
            # 60 s: slowloris) and the whole request, body included, within 10 s (default 300 s: a
            # trickled body), answered 408; checked every second rather than every 30 s
            # (connectionsCheckingInterval), so a cut comes at 10-11 s. The http2 server has neither.
            settings["server"].update(headersTimeout=10000, requestTimeout=10000)
            settings["options"] = {"connectionsCheckingInterval": 1000}
        settings["backlog"] = 4096  # as nginx's tuned backlog (Node's: 511)
        # Not maxRequestsPerSocket=1024 (the 2016 write-up's other keep-alive setting): past it Node answers 503
        # to requests already sent on the connection, an error the load would count.
    tls = site.tls
    if tls is not None:
        # Node's own defaults otherwise: TLS 1.2 to 1.3, tickets on, no session-id cache.
        settings["tls"] = {"cert": str(tls.cert), "key": str(tls.key)}
        if tls.version:
            settings["tls"]["minVersion"] = settings["tls"]["maxVersion"] = f"TLSv{tls.version}"  # pinned
        if profile.name == "tuned":
            # Node's docs: cluster workers must share the ticket key, or a ticket resumes only on the
            # worker that issued it; sessions outlive a run's rounds (Node's default: 300 s).
            settings["tls"].update(shareTicketKeys=True, sessionTimeout=3600)
    if site.http2:
        settings["http2"] = True
        if profile.name == "tuned":
            # Node's maxConcurrentStreams is unlimited by default; nginx's 128, above the plans' 100
            # streams per connection (h2load's -m 100), bounds what one session may hold in memory.
            # Its windows bound only request bodies (GETs have none): left at 64 KB.
            settings["h2settings"] = {"maxConcurrentStreams": 128}
    for directive in profile.directives:
        name, _, value = directive.replace("=", " ", 1).partition(" ")
        value = value.strip()
        try:
            settings["server"][name] = json.loads(value)
        except ValueError:
            settings["server"][name] = value  # a plain string
    # JSON has no comments: the profile is recorded as a key node_static.js ignores.
    return json.dumps({"_profile": profile.name, **settings}, indent=2) + "\n"
