//! The `httpbench-load` command line, as a library so that the Python module runs the very same
//! flags (`httpbench load ...`) instead of a second definition of them.

mod args;
mod interrupt;
mod summary;

use clap::Parser;
use httpbench_engine::ErrorKind;

/// Run the command line with `args` (the first one is the program name); returns the exit code:
/// 0 done, 1 the run ended early (what it measured is still printed), 2 bad input, 130 Ctrl-C.
pub fn main_with_args<I: IntoIterator<Item = String>>(args: I) -> i32 {
    let cli = match args::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            if code == 2 {
                // clap's own message, kept to its first line: what is wrong, then the hint.
                let text = e.render().to_string();
                let first = text.lines().next().unwrap_or("invalid arguments");
                eprintln!("httpbench-load: {}; see --help", first.trim_start_matches("error: "));
            } else {
                let _ = e.print();
            }
            return code;
        }
    };
    let spec = match cli.to_spec() {
        Ok(spec) => spec,
        Err(msg) => {
            eprintln!("httpbench-load: {msg}");
            return 2;
        }
    };
    let report = match interrupt::on_ctrl_c(|stop| httpbench_engine::run_until(&spec, stop)) {
        Ok(report) => report,
        Err(e) => {
            match e.kind {
                ErrorKind::OpenFiles(o) => eprintln!("httpbench-load: {}", o.message(&format!("lower -c to {}", o.most))),
                ErrorKind::Other => eprintln!("httpbench-load: {e}"),
            }
            return 2;
        }
    };
    if cli.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("reports serialise"));
    } else {
        print!("{}", summary::render(&report));
    }
    match &report.aborted {
        None => 0,
        Some(_) if interrupt::was_interrupted() => 130,
        Some(_) => 1,
    }
}
