"""similar.*: -sim, APIs with no NPU implementation replaced by similar ones (a LibCST stage
after the span pass)."""
