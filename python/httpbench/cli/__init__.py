"""The command line: `main` parses each subcommand's flags and hands them on, `console` shows a
run, its progress and its summary in the terminal, `doctor` says what this host can measure."""
