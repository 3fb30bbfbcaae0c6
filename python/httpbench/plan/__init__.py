"""A plan: what a run measures. `model` holds its types (Plan, Cell, Budget, Rounds, PlanError),
`toml` reads a plan file into them checking every key (`values`, `protocols`, `lines`), `builtin`
loads the plans shipped in `plans/` or one a user names; `workload`, `dynamic` and `protocol` are
what a cell serves and how it is fetched."""
