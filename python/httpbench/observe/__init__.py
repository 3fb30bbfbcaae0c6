"""What the servers and the machine did meanwhile, read from /proc: a server's process tree, its CPU
and memory per level (`monitor`), workers that exited and were replaced (`restarts`), and who
waited for a CPU (`contention`)."""
