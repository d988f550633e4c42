"""Where and how shards run: atomic files, completion records, the Prefect API and the Dask cluster."""
