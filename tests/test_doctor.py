"""`httpbench doctor` and the command line's handling of bad input, run as a user would."""

import json
import subprocess
import sys


def httpbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "httpbench", *args], capture_output=True, text=True, timeout=60)


def test_doctor_reports_and_warns_about_tw_recycle():
    result = httpbench("doctor")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any("tcp_tw_recycle" in line and "NAT" in line for line in lines)
    checks = [line for line in lines if not line.startswith("host ")]
    assert checks and all(line.split()[0] in ("ok", "warn") for line in checks)


def test_doctor_json_has_facts_and_checks():
    result = httpbench("doctor", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["facts"]["kernel"]
    assert report["facts"]["cpus"] >= 1
    assert {c["status"] for c in report["checks"]} <= {"ok", "warn"}


def test_bad_subcommand_is_one_line_and_exit_2():
    result = httpbench("frobnicate")
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("httpbench: error:")
    assert "Traceback" not in result.stderr


def test_bad_flag_is_one_line_and_exit_2():
    result = httpbench("doctor", "--frobnicate")
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert "Traceback" not in result.stderr
