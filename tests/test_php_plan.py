"""The `dynamic` plan (issue 16): which servers it takes, a plan naming a server that cannot run PHP
refused before anything starts, and the plan shortened to nginx (PHP-FPM) and apache2-prefork
(mod_php) run through `httpbench run`, its report drawn in the real headless Chromium: PHP's
memory apart, CPU per page, the dynamic pages' sentences; those sentences on doctored copies of
the run (a tie stays a tie, a cell whose PHP died is never ranked)."""

import shutil
from importlib import resources

import pytest
from conftest import refused_run
from httpbench import results, servers
from httpbench.plan import builtin as plans
from httpbench.plan.dynamic import PHP_KINDS
from httpbench.report import charts, php_summary
from httpbench.store.database import Store
from test_report import copy_run, draw_offline, httpbench

# The servers that run PHP here, as the plan's notes size it.
PHP_SERVERS = ["apache2-event", "apache2-prefork", "apache2-worker", "caddy", "h2o", "lighttpd", "nginx"]
SHORT = (
    resources.files("httpbench")
    .joinpath("plan/plans/dynamic.toml")
    .read_text()
    .replace('name = "dynamic"', 'name = "dynamic-short"')
    .replace('profiles = ["tuned"]', 'servers = ["nginx", "apache2-prefork"]\nprofiles = ["tuned"]')
    .replace("list = [1, 10, 50, 100, 250, 500, 1000]", "list = [1, 10]")
    .replace('duration = "1s"', 'duration = "0.3s"')
    .replace('warmup = "0.5s"', 'warmup = "0s"')
)


def test_the_dynamic_plan_takes_every_installed_server_that_runs_php_in_under_eight_minutes(tmp_path):
    from httpbench.placement import Placement
    from httpbench.sweep.sweep import Sweep

    dynamic = plans.builtin()["dynamic"]
    assert dynamic.servers is None and tuple(w.php for w in dynamic.workloads) == PHP_KINDS
    assert dynamic.levels == plans.builtin()["quick"].levels and dynamic.server_cpus == (1,)
    assert [n for n in servers.names() if servers.php_refusal(servers.get(n)) is None] == PHP_SERVERS
    seconds = dynamic.estimate_seconds(len(PHP_SERVERS))
    assert seconds < 8 * 60 and f"about {seconds:.0f} s" in dynamic.notes
    sweep = Sweep(dynamic, Store(str(tmp_path / "r.db")), Placement.choose("0", "1"))
    shutil.rmtree(sweep.scratch)
    assert sorted({c.server for c in sweep.cells}) == PHP_SERVERS and len(sweep.cells) == 3 * len(PHP_SERVERS)
    # The others lose their cells, one note each, said when the run starts.
    assert "reference: no PHP cells (php-hello, php-page, php-wait): reference cannot run PHP" in "\n".join(
        sweep.left_out
    )
    assert len(sweep.left_out) == len(servers.names()) - len(PHP_SERVERS)


def test_a_plan_naming_a_server_that_cannot_run_php_is_refused_in_one_line_leaving_nothing(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(SHORT.replace('"apache2-prefork"]', '"varnish"]'))
    err = refused_run(plan, tmp_path / "results.db")
    assert err.startswith("httpbench: workload php-hello runs PHP scripts: varnish cannot run PHP in httpbench")
    assert "nginx" in err  # among the servers that can


def test_a_named_server_whose_php_is_not_installed_is_refused_with_the_install_command(tmp_path, monkeypatch):
    # As if php-fpm were missing where the servers run: refused before anything starts.
    from httpbench.placement import Placement
    from httpbench.servers import php_install
    from httpbench.sweep.sweep import Sweep

    monkeypatch.setattr(
        php_install, "missing", lambda runs_php: f"PHP-FPM is not installed; install it with: {php_install.FPM_INSTALL}"
    )
    plan = plans.parse(SHORT.replace(', "apache2-prefork"]', "]"), "dynamic-short.toml")
    with pytest.raises(servers.PHPUnsupported) as refused:
        Sweep(plan, Store(str(tmp_path / "r.db")), Placement.choose("0", "1"))
    assert str(refused.value) == (
        "workload php-hello runs PHP scripts: PHP-FPM is not installed; install it with: "
        "apt-get install -y php8.2-fpm php8.2-opcache"
    )
    # Unnamed, no installed server is left to run the plan's cells: refused too, not an empty run.
    with pytest.raises(servers.PHPUnsupported, match="install it with: apt-get install -y php8.2-fpm"):
        Sweep(plans.builtin()["dynamic"], Store(str(tmp_path / "r.db")), Placement.choose("0", "1"))


@pytest.fixture(scope="module")
def dynamic_run(tmp_path_factory):
    """The shortened dynamic plan run through the CLI: (database, its stdout, the report it wrote)."""
    base = tmp_path_factory.mktemp("dynamic")
    assert "list = [1, 10]" in SHORT and 'servers = ["nginx", "apache2-prefork"]' in SHORT
    (base / "dynamic-short.toml").write_text(SHORT)
    db = base / "results.db"
    done = httpbench("run", str(base / "dynamic-short.toml"), "--db", str(db))
    assert done.returncode == 0, done.stderr[-2000:]
    return db, done.stdout, base / "report-run-1.html"


def test_a_shortened_dynamic_run_reports_php_apart_and_is_drawn_in_chromium(dynamic_run, tmp_path):
    db, shown, page_file = dynamic_run
    run = results.load(Store(str(db)), 1)
    assert [(c.server, c.php, c.status) for c in run.cells] == [
        (server, kind, "done") for server in ("nginx", "apache2-prefork") for kind in PHP_KINDS
    ]
    fpm, module = run.cells[0].levels[-1], run.cells[3].levels[-1]
    # nginx's pool is its own figure, inside the server's; mod_php has none apart.
    assert 0 < fpm.php_memory_bytes < fpm.server_memory_bytes and fpm.php_processes >= 2
    assert module.php_memory_bytes is None and module.server_memory_bytes
    # The run's summary and show: the dynamic pages' sentences; show's levels, the pool's memory in
    # brackets in the memory column.
    assert "dynamic pages (PHP):" in shown
    levels = httpbench("show", "1", "--db", str(db))
    assert levels.returncode == 0 and "MiB (PHP's)" in levels.stdout, levels.stderr
    said = " ".join(shown.split())
    assert "nginx/tuned (php-page, keep-alive, 1 CPU) serves" in said and "of server CPU per page" in said
    assert "its PHP-FPM pool (" in said and "its processes, PHP inside them, peaked at" in said
    assert "pages per second as" in said  # the two servers set against each other
    problems, drawn, failed = draw_offline(page_file, tmp_path / "report.png")
    marks = dict(drawn)
    assert problems == [] and failed == 0
    assert marks["chart-php_memory"] >= 6 and marks["chart-php_cpu_per_page"] >= 6, drawn
    text = page_file.read_text()
    assert '<h3 id="dynamic-pages">Dynamic pages (PHP)</h3>' in text and "<th>PHP memory</th>" in text


def test_dynamic_sentences_keep_ties_and_never_rank_a_cell_whose_php_died(dynamic_run):
    db, _, _ = dynamic_run

    def doctor(key, level, index, m):
        m["flags"] = []
        m["requests"]["per_second"] = {"php-hello": 3000.0, "php-page": 1000.0, "php-wait": 400.0}[key.split("/")[2]]
        if key.startswith("nginx/"):  # 3% ahead with hello pages, twice as fast with the 10 KB page
            m["requests"]["per_second"] *= {"php-hello": 1.03, "php-page": 2.0, "php-wait": 1.0}[key.split("/")[2]]
        if key == "nginx/tuned/php-wait/ka/1cpu" and level == 10:
            m["flags"] = [{"kind": "crashed", "reason": "its PHP-FPM pool's master (pid 42) died during the window"}]

    run = results.load(Store(str(db)), copy_run(db, 1, doctor=doctor))
    lines = php_summary.dynamic_pages([run])
    assert (
        "With PHP (php-hello, keep-alive, 1 CPU), nginx/tuned serves as many pages per second as "
        "apache2-prefork/tuned (1.03 times: within 5%, which single rounds cannot tell from noise)." in lines
    )
    assert (
        "With PHP (php-page, keep-alive, 1 CPU), nginx/tuned serves 2.00 times as many pages per second as "
        "apache2-prefork/tuned." in lines
    )
    # The pool died at level 10: nginx's php-wait cell is said, never set against another.
    assert not any(line.startswith("With PHP (php-wait") for line in lines)
    assert any(
        line.startswith("nginx/tuned (php-wait, keep-alive, 1 CPU) serves 400 pages per second")
        and "(it did not finish, so it is not ranked)" in line
        for line in lines
    )
    m = charts.Measured([run], charts.Choices())
    assert {r["memory"] for r in charts.php_memory(m).vega_lite["data"]["values"]} == {
        "all its processes",
        "its PHP-FPM pool",
    }


def test_a_level_s_memory_is_pss_only_where_every_round_has_it():
    from httpbench.results import peak_memory

    both = [{"pss": 10, "rss": 50}, {"pss": 12, "rss": 60}]
    assert peak_memory(both, "pss", "rss") == 12
    # One round without PSS: RSS for every round, never one round's RSS beside another's PSS.
    assert peak_memory([*both, {"pss": None, "rss": 55}], "pss", "rss") == 60
    assert peak_memory([], "pss", "rss") is None
