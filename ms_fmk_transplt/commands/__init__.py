"""The commands: the command line, its options and modes, shell completion, the docs
build (the entry layer)."""
