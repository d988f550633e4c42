"""The papers' evaluation metrics, each a plain function over tables, and their reports."""
