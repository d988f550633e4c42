"""Stage logic: plain functions over Arrow tables, each testable without Prefect or Dask."""
