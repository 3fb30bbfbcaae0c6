fn main() {
    std::process::exit(httpbench_load::main_with_args(std::env::args()));
}
