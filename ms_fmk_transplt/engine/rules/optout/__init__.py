"""optout.*: `# msft: skip-file` and `# msft: ignore[...]` comments."""
