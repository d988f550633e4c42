"""The resident service, a layer above the engine: the daemon that keeps a Prefect server and a warm
Dask cluster up (`xmdata up`), its warm command process and the `xmdata` entry point that hands
commands to it, its files and status, and what a command runs against (run_setup). runtime/, tasks/
and flows/ never import it (tests/test_layout.py): a caller hands the engine its target."""
