"""user_rules.*: -r, the user's JSON rules (a LibCST stage before the span pass)."""
