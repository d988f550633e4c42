"""Small reference data shipped with xmdata: sample inputs for the demo, and later language tables."""
import os

DATA_DIR = os.path.dirname(os.path.abspath(__file__))


def sample_path(name: str) -> str:
    return os.path.join(DATA_DIR, "sample", name)
