"""Apache Traffic Server 9.2, from Debian's trafficserver, caching in front of the nginx adapter.

ATS reads a whole directory of configuration files and writes logs, a cache file and runtime
state beside it. A runroot file (`runroot.yaml`) points all of those into the run directory, and
`traffic_server` runs alone (no traffic_manager) in the foreground. Profile directives are extra
records.config lines, e.g. `CONFIG proxy.config.http.cache.http INT 0`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

from httpbench.servers.adapters.nginx import Nginx
from httpbench.servers.base import TLS_VERSIONS, Config, Server, ServerProfile, Site

ETC = Path("/etc/trafficserver")


class TrafficServer(Server):
    name = "trafficserver"
    summary = "Apache Traffic Server, event threads, caching in front of nginx"
    packages = ("trafficserver", "nginx-light")
    program = "/usr/bin/traffic_server"
    speaks_tls = True  # ssl_multicert.config, OpenSSL 3
    # ATS offers h2 by ALPN on every TLS port by default. No h2c: given the HTTP/2 preface on a
    # cleartext port, ATS 9.2 closes the connection (checked with curl --http2-prior-knowledge).
    speaks_h2 = True

    def version_args(self) -> List[str]:
        return ["-V"]

    # tuned passes what its nginx backend (tuned too, on the same site) sent: no compress plugin
    # is loaded (plugin.config is empty), so ATS neither compresses nor decompresses; with
    # normalize_ae 2 (below) it forwards br or gzip and keeps one alternate per coding by
    # nginx's Vary: Accept-Encoding.
    tuned_codings = Nginx.tuned_codings
    coding_modules = Nginx.coding_modules

    def backend(self) -> Server:
        return Nginx()

    def render(self, site: Site, profile: ServerProfile) -> Config:
        run = site.run_dir
        files = {
            "records.config": records(site, profile),
            "remap.config": f"map / http://{site.upstream}/\n",  # every request to the nginx backend
            "storage.config": f"{run} 256M\n",  # Debian's 256 MB, as the (sparse) file run/cache.db
            "ip_allow.yaml": IP_ALLOW,
            "runroot.yaml": "".join(f"{key}: {value}\n" for key, value in _layout(run).items()),
        }
        if profile.name == "default":
            files["logging.yaml"] = LOGGING
        if site.tls is not None:
            # Every address gets the site's certificate.
            files["ssl_multicert.config"] = f"dest_ip=* ssl_cert_name={site.tls.cert} ssl_key_name={site.tls.key}\n"
        return Config(files)

    def command(self, site: Site, config_dir: Path) -> List[str]:
        return [self.executable(), f"--run-root={config_dir / 'runroot.yaml'}"]


def _layout(run: Path) -> Dict[str, str]:
    """Programs and plugins from the package; configuration, logs, cache and state all in `run`
    itself (ATS creates none of its directories)."""
    return {
        "prefix": "/usr",
        "exec_prefix": "/usr",
        "bindir": "/usr/bin",
        "sbindir": "/usr/sbin",
        "includedir": "/usr/include",
        "libdir": "/usr/lib/trafficserver",
        "libexecdir": "/usr/lib/trafficserver/modules",
        "sysconfdir": str(run),
        "datadir": str(run),
        "localstatedir": str(run),
        "runtimedir": str(run),
        "logdir": str(run),
        "cachedir": str(run),
    }


def records(site: Site, profile: ServerProfile) -> str:
    ip = site.address
    family = ":ipv6" if ":" in site.host else ""
    ssl = ":ssl" if site.tls else ""
    lines = [
        f"# rendered by httpbench for profile {profile.name}",
        f"CONFIG proxy.config.http.server_ports STRING {site.port}{ssl}{family}:ip-in={ip}",
        f"CONFIG proxy.config.body_factory.template_sets_dir STRING {ETC / 'body_factory'}",
        "# #-1: stay the suite's user (Debian switches to trafficserver, who cannot enter the run dir)",
        "CONFIG proxy.config.admin.user_id STRING #-1",
        "# no crash-log helper process: it insists on a named user and adds a process to account",
        "CONFIG proxy.config.crash_log_helper STRING NULL",
        "CONFIG proxy.config.reverse_proxy.enabled INT 1",
        "CONFIG proxy.config.url_remap.remap_required INT 1",
        "# Debian's (and upstream's) 2 caches only responses with Expires or max-age, which nginx",
        "# does not send: ATS would cache nothing. 1: Last-Modified suffices (nginx sends it); the",
        "# object then lives for the heuristic lifetime, at least an hour.",
        "CONFIG proxy.config.http.cache.required_headers INT 1",
        "# Debian's 1 binds threads to all CPUs of a socket, undoing the suite's pinning.",
        "CONFIG proxy.config.exec_thread.affinity INT 0",
        "# Open the ports only once the cache is ready, and stop if it failed (default 0: at once).",
        "# A request in the milliseconds before crashed ATS 9.2 (SIGSEGV in Cache::key_to_vol), and",
        "# a cache that failed would pass every request to the backend: a proxy measured, not a cache.",
        "CONFIG proxy.config.http.wait_for_cache INT 2",
    ]
    if profile.name == "tuned":
        lines += [
            "# one event thread per core given (the 2016 write-up), not one per core of the machine",
            "CONFIG proxy.config.exec_thread.autoconfig INT 0",
            f"CONFIG proxy.config.exec_thread.limit INT {site.workers}",
            "# each event thread accepts on its own SO_REUSEPORT socket (as nginx's reuseport)",
            "# instead of an accept thread handing every connection over",
            "CONFIG proxy.config.accept_threads INT 0",
            "CONFIG proxy.config.exec_thread.listen INT 1",
            "# no access log: every write-up turned logging off",
            "CONFIG proxy.config.log.logging_enabled INT 0",
            "# the 2016 write-up's 60 s keep-alive (Debian 120 s): how long an idle client holds on",
            "CONFIG proxy.config.http.keep_alive_no_activity_timeout_in INT 60",
            "# Slow clients, from the records.config reference (docs.trafficserver.apache.org/en/9.2.x/",
            "# admin-guide/files/records.config.en.html). accept_no_activity_timeout: a new connection",
            "# that sends nothing is closed after 10 s (default 120 s)",
            "CONFIG proxy.config.http.accept_no_activity_timeout INT 10",
            "# transaction_no_activity_timeout_in: the longest silence from the client within a",
            "# request (or in taking a response) before ATS closes it (default 30 s)",
            "CONFIG proxy.config.http.transaction_no_activity_timeout_in INT 10",
            "# transaction_active_timeout_in: a whole transaction's time, however the client trickles",
            "# (default 900 s): the only limit that cuts a slowloris here (a header line every 5 s",
            "# keeps the no-activity timeouts away). 30 s, three times the load's own request timeout",
            "# (10 s), so no request the load still waits for is cut",
            "CONFIG proxy.config.http.transaction_active_timeout_in INT 30",
            "# no Via or X-Forwarded-For work per request: headers nobody here reads",
            "CONFIG proxy.config.http.insert_request_via_str INT 0",
            "CONFIG proxy.config.http.insert_response_via_str INT 0",
            "CONFIG proxy.config.http.insert_client_ip INT 0",
            "CONFIG proxy.config.http.insert_squid_x_forwarded_for INT 0",
            "# within the 20,000 descriptors here, leaving half to the client (Debian 30,000)",
            "CONFIG proxy.config.net.connections_throttle INT 10000",
        ]
        if site.encoding in TrafficServer.tuned_codings:
            lines += [
                "# ATS 9's default 1 rewrites Accept-Encoding to gzip or nothing before the cache and",
                "# the origin see it; 2 (records.config docs) keeps br, else gzip: one variant each",
                "CONFIG proxy.config.http.normalize_ae INT 2",
            ]
    else:
        lines += [
            "# Debian's records.config where it differs from the compiled-in defaults",
            "CONFIG proxy.config.exec_thread.autoconfig INT 1",
            "CONFIG proxy.config.exec_thread.autoconfig.scale FLOAT 1.0",
            "CONFIG proxy.config.accept_threads INT 1",
            "CONFIG proxy.config.task_threads INT 2",
            "CONFIG proxy.config.http.insert_request_via_str INT 1",
            "CONFIG proxy.config.http.insert_response_via_str INT 0",
            "CONFIG proxy.config.http.keep_alive_no_activity_timeout_in INT 120",
            "CONFIG proxy.config.http.insert_client_ip INT 1",
            "CONFIG proxy.config.http.insert_squid_x_forwarded_for INT 1",
            "CONFIG proxy.config.http.cache.ignore_client_cc_max_age INT 1",
            "CONFIG proxy.config.http.cache.cache_responses_to_cookies INT 1",
            "CONFIG proxy.config.http.cache.cache_urls_that_look_dynamic INT 1",
            "CONFIG proxy.config.http.cache.when_to_revalidate INT 0",
            "CONFIG proxy.config.net.connections_throttle INT 30000",
            "CONFIG proxy.config.log.logging_enabled INT 3",
        ]
    lines += _tls(site, profile)
    if site.http2 and profile.name == "tuned":
        lines += [
            "# ATS docs: streams per connection (default 100): above the plans' 100",
            "CONFIG proxy.config.http2.max_concurrent_streams_in INT 128",
            "# the 2016 write-up's 60 s keep-alive for idle h2 connections too (default 120 s)",
            "CONFIG proxy.config.http2.no_activity_timeout_in INT 60",
            "# its windows bound only request bodies (GETs have none): initial_window_size_in stays",
        ]
    lines += list(profile.directives)
    return "\n".join(lines) + "\n"


def _tls(site: Site, profile: ServerProfile) -> List[str]:
    """records.config's TLS lines: the pinned version if any, and in tuned what ATS's docs
    recommend for throughput. The certificate itself is in ssl_multicert.config."""
    tls = site.tls
    if tls is None:
        return []
    lines = []
    if tls.version:
        lines += ["# pinned by the site"] + [
            f"CONFIG proxy.config.ssl.TLSv{v.replace('.', '_')} INT {int(v == tls.version)}" for v in TLS_VERSIONS
        ]
    if profile.name == "tuned":
        lines += [
            "# ATS's own session cache (the default, said): resumption by session id across all its",
            "# threads; an hour outlives a run's rounds (default 300 s)",
            "CONFIG proxy.config.ssl.session_cache INT 2",
            "CONFIG proxy.config.ssl.session_cache.timeout INT 3600",
            "# tickets: 1.3 resumption and stateless 1.2 resumption (the default, said)",
            "CONFIG proxy.config.ssl.server.session_ticket.enable INT 1",
            "# ATS docs: dynamic record sizes, small records first, so a small response is readable",
            "# as soon as it arrives (as nginx's ssl_buffer_size 4k); default 0, always 16 KB",
            "CONFIG proxy.config.ssl.max_record_size INT -1",
        ]
    return lines


# Debian's rules for loopback, the only address served here: any method.
IP_ALLOW = """ip_allow:
  - apply: in
    ip_addrs: 127.0.0.1
    action: allow
    methods: ALL
  - apply: in
    ip_addrs: ::1
    action: allow
    methods: ALL
"""

# Debian's access log: squid format, binary, in the log dir (here the run dir).
LOGGING = """logging:
  formats:
    - name: squid
      format: '%<cqtq> %<ttms> %<chi> %<crc>/%<pssc> %<psql> %<cqhm> %<cquc> %<caun> %<phr>/%<shn> %<psct>'
  logs:
    - filename: squid
      format: squid
      mode: binary
"""
