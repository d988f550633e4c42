"""The tiny QA release (support/qa_release.py) and the tiny decoder, built once per run."""
from __future__ import annotations

import pytest

from support.qa_release import qa_rows, write_release


@pytest.fixture(scope="session")
def qa_release(tmp_path_factory):
    return write_release(tmp_path_factory.mktemp("qa-release"), qa_rows(40))


@pytest.fixture(scope="session")
def tiny_decoder(tmp_path_factory):
    from xmdata.models.tiny_corpus import generate_sentences
    from xmdata.models.tiny_decoder import build_tiny_decoder

    return build_tiny_decoder(tmp_path_factory.mktemp("decoder"), generate_sentences(seed=0), seed=0)
