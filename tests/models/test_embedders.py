"""The Hugging Face CLIP-like embedder on the tiny real model: texts are cut to what the tower takes."""
import numpy as np


def test_texts_are_cut_to_the_tokenizer_limit_when_it_is_below_the_position_table(tiny_models):
    from xmdata.models.embedders import HfEmbedder

    embedder = HfEmbedder(tiny_models["hf_clip"])
    embedder.load()
    positions = embedder.model.config.text_config.max_position_embeddings
    assert embedder.text_length() == positions  # the tiny tokenizer sets no limit of its own
    long_text = "a red bicycle in the park " * 200  # far past either limit
    full = embedder.embed_texts([long_text, "hi"])
    embedder.tokenizer.model_max_length = positions // 2  # an XLM-R-style tower: 512 tokens, 514 positions
    assert embedder.text_length() == positions // 2
    cut = embedder.embed_texts([long_text, "hi"])
    assert cut.shape == full.shape and np.allclose(np.linalg.norm(cut, axis=1), 1, atol=1e-5)
    assert not np.allclose(cut[0], full[0])  # fewer tokens of the long text were read
