"""Reports written from the recorded events: one module per output file."""
