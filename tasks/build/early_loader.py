"""Decoding that starts before the model has loaded.

A stage that reads images through a model's own recipe cannot start its decoders until it knows the
recipe, and a cold model takes seconds to load (torch's and open_clip's imports alone are 4-6 s here):
the decoders sat idle all that time, then the model sat idle while they caught up. With the recipe
recorded by an earlier load (models/loader_facts.py), the decoders start first and the model loads
beside them; the loaded model's own recipe is then checked against the record, and a record that was
wrong is paid in time only: its loader is dropped and decoding starts again with the model's.
"""
from __future__ import annotations

import contextlib
import logging
from typing import Callable, Iterator

from xmdata.models.base import ModelSpec
from xmdata.models.loader_facts import LoaderFacts, record_facts, recorded_facts

from .batch_loader import PrefetchingLoader

log = logging.getLogger(__name__)


@contextlib.contextmanager
def model_and_loader(kind: str, spec: ModelSpec, start: Callable[[LoaderFacts], PrefetchingLoader]
                     ) -> Iterator[tuple[object, PrefetchingLoader, LoaderFacts]]:
    """(model, loader, facts): the model of `kind` for `spec` (registry.get_model), and `start(facts)`'s
    loader for the model's own loader facts — started from the recorded facts before the model loads
    when this process does not hold the model yet and a record exists."""
    from xmdata.models.registry import MODELS, get_model

    with contextlib.ExitStack() as stack:
        held = MODELS.peek(kind, spec) is not None
        guess = None if held else recorded_facts(kind, spec)
        early = None
        if guess is not None:
            try:
                early = stack.enter_context(start(guess))
            except Exception as exc:  # a record that reads but cannot start a loader: as if there were none
                log.warning("the recorded loader facts of %s could not start a loader (%s: %s): ignored",
                            spec.name_or_path, type(exc).__name__, exc)
                guess = None
        model = get_model(kind, spec)
        facts = LoaderFacts(model.decode_recipe(), model.default_batch_size())
        if facts == guess:
            yield model, early, facts
            return
        if early is not None:
            log.info("the recorded loader facts of %s were not the model's: decoding again with its own",
                     spec.name_or_path)
            early.close()
        if not held:
            record_facts(kind, spec, facts)
        yield model, stack.enter_context(start(facts)), facts
