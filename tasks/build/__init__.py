"""What every build shares: ingest into shards, row checks, rejects, the summary, batching for models."""
