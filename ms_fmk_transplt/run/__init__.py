"""A run's orchestration: the pipeline, the tree and each file migrated (the pool,
isolation), staging, shards, the zoo."""
