"""`xmdata import FORMAT SOURCE --out DIR`: one small adapter per public layout, turning a local copy
of a published dataset into the project's contract tables (schemas/), with a per-format report.
`formats.py` is the one mapping of format name -> adapter; it imports nothing heavy."""
