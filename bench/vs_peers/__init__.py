"""bench/engine_vs_peers as a package: matrix (scenarios and their runs), servers (the package's
adapters on a ServerHost), tools (one client run, parsed by the package's parsers), targets,
report (text and Markdown) and main (the command line and the loop)."""
