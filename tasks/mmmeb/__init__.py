"""MMMEB assembly (xVLM2Vec): task instances, prompts, published candidate pools, embeddings."""
