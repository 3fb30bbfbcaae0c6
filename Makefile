# The two commands of the README: `make run` (the main job) and `make test`.
# Both install what they need on a fresh Debian machine (as root) and are safe to rerun.

PY ?= python3
# The servers `make run` sweeps and the write-ups' own load clients its plans may name (ab, wrk,
# h2load); what the tests add (a real PostgreSQL, network namespaces, a real Chromium for the
# HTML report); peers the benchmark scripts measure against. curl is the servers' side too: it
# fetches the workload over HTTP/2 when a server offering h2 is verified.
SERVER_PACKAGES := nginx-light libnginx-mod-http-brotli-static apache2 lighttpd lighttpd-mod-openssl lighttpd-mod-deflate varnish hitch h2o caddy trafficserver mighttpd2 jetty9 nodejs nghttp2-server curl
# PHP for the dynamic workloads: the PHP-FPM pool the suite runs itself (never Debian's service).
SERVER_PACKAGES += php8.2-fpm php8.2-opcache
# mod_php, with which apache2-prefork runs PHP (from the run directory, as every server).
SERVER_PACKAGES += libapache2-mod-php8.2
CLIENT_PACKAGES := apache2-utils wrk nghttp2-client
TEST_PACKAGES := $(SERVER_PACKAGES) $(CLIENT_PACKAGES) nghttp2-server iproute2 postgresql chromium fonts-liberation
# bench/slow_servers: Debian's slowhttptest against apache2, nginx and lighttpd (issue 28).
BENCH_PACKAGES := nginx-light h2o apache2 lighttpd slowhttptest $(CLIENT_PACKAGES)
ARGS ?=
# Where pip put `httpbench`, so on PATH with it: `httpbench-load`, the engine's standalone
# binary the README tells users to run, is installed there too.
BINDIR ?= $(shell $(PY) -c 'import sysconfig; print(sysconfig.get_path("scripts"))')

.PHONY: run test lint generate deps test-deps bench-deps build install-load fuzz bench

# The main job: install the servers, then sweep the quick plan (or ARGS="PLAN --servers ...").
run: deps build
	httpbench run $(ARGS)

test: test-deps build lint
	cargo test --workspace --quiet
	$(PY) -m pytest -q tests

# rustfmt, clippy and ruff keep the format and catch what a reviewer should not have to;
# lint-imports holds the Python rooms to pyproject.toml's import contract (the source tree's).
lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	$(PY) -m ruff check python tests bench tools
	$(PY) -m ruff format --check python tests bench tools
	cd python && PYTHONPATH=. "$(BINDIR)/lint-imports" --config ../pyproject.toml --no-cache

# Python's typed view of the report from the engine's types (after a change to
# crates/engine/src/report.rs); `build` first, since the installed module hands the types over.
generate: build
	$(PY) tools/report_fields.py

# apt-get only when a package is missing, so reruns are quick and offline.
define apt_install
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

deps:
	$(call apt_install,$(SERVER_PACKAGES) $(CLIENT_PACKAGES))

test-deps:
	$(call apt_install,$(TEST_PACKAGES))

bench-deps:
	$(call apt_install,$(BENCH_PACKAGES))

# The Python package (its wheel builds the engine module) and the engine's binaries. The module's
# crate is left out of the release build: the wheel builds it (profile `python`), and a release
# build of it would be a second fat-LTO link of the whole engine that nothing uses.
build:
	$(PY) -m pip install --quiet --root-user-action=ignore '.[test]'
	cargo build --release --workspace --exclude httpbench-py --quiet
	@$(MAKE) --no-print-directory install-load

install-load:
	install -m 0755 target/release/httpbench-load "$(BINDIR)/httpbench-load"
	@if command -v pyenv >/dev/null; then pyenv rehash; fi   # pyenv's PATH holds shims, not BINDIR

# The response parser, the HPACK decoder and the HTTP/2 connection under cargo-fuzz, each
# bounded to 60 s.
fuzz:
	command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
	mkdir -p fuzz/corpus/response_parser fuzz/corpus/hpack_decoder fuzz/corpus/h2_frames
	cd fuzz && cargo +nightly fuzz run response_parser corpus/response_parser seeds/response_parser -- -max_total_time=60 -dict=response_parser.dict
	cd fuzz && cargo +nightly fuzz run hpack_decoder corpus/hpack_decoder seeds/hpack_decoder -- -max_total_time=60
	cd fuzz && cargo +nightly fuzz run h2_frames corpus/h2_frames seeds/h2_frames -- -max_total_time=60

bench: bench-deps build
	bench/engine_vs_peers
