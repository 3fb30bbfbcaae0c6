"""A run of a plan: `session` opens or resumes it in the store, `sweep` measures every cell's
levels and rounds on a fresh server and hands each round to the store, `ceiling` measures the
client's own ceiling from rounds the sweep runs, `target` says where the load goes."""
