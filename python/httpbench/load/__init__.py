"""One level's load: the Rust engine (`engine`), the write-ups' own tools (`tools`: ab, wrk,
h2load) parsed into the engine's report shape, and the one typed view of that report (`report`,
over `fields`, generated from the engine's Rust types)."""
