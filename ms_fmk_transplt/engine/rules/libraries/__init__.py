"""libraries.*: third-party training libraries (rules/libraries.json): one row per file and
library."""
