"""Clean evaluation sets: near-duplicates inside a set (dedup) and overlap with training data
(contamination), for images and captions. Score first, select second: matchers find pairs with a
measure and a score; grouping, rejects and the report decide from them without a model."""
