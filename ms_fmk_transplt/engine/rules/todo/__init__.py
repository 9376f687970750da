"""todo.*: `# msft: TODO[...]` comments on lines a structural option could not finish."""
