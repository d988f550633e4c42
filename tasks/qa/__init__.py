"""Question/Answer packed translation (xVLM2Vec): pack, translate, extract, select."""
