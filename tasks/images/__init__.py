"""Downloading images named by URL: fetch (fetch.py), check and describe (decode.py), store (write.py),
resume row by row (journal.py), one shard at a time (download.py)."""
