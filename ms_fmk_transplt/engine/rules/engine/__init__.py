"""engine.*: what the engine itself reports (a file it failed on, a statement it left as
written)."""
