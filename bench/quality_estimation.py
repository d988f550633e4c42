"""COMETKiwi pairs/s before and after the Trainer reuse, in one run, on the same pairs.

before: comet's own `model.predict` (what the estimator called until issue 18): a Lightning Trainer,
        its connectors and a DataLoader built on every call, batches of a fixed count.
after:  the estimator: one Trainer per process, pairs length-sorted into token-budget batches.
Both on the tiny COMETKiwi (CPU), as many calls of a few candidates (a shard of short captions) and
as one call of every pair; the scores are checked to be the same.
"""
from __future__ import annotations

import time

PAIRS, PER_CALL = 1200, 25  # 25: the candidates of one text at the paper's setting


def pairs(n: int) -> tuple[list[str], list[str]]:
    from bench.translation import sentences

    texts = sentences(n)
    return texts, [" ".join(reversed(t.split())) for t in texts]


def main() -> list[dict]:
    from xmdata.models.registry import get_model
    from xmdata.models.tiny import cached_tiny_models

    from xmdata.tasks.translation.options import FilterOptions

    qe = FilterOptions(qe_model=cached_tiny_models(seed=0)["cometkiwi"].name_or_path).qe_spec()
    estimator = get_model("quality_estimator", qe)
    batch = estimator.prepare(*pairs(PAIRS))

    def before(items):
        return estimator.model.predict(items, batch_size=32, gpus=0, progress_bar=False, num_workers=0).scores

    figures = []
    for label, calls in ((f"calls of {PER_CALL}", [batch[i:i + PER_CALL] for i in range(0, PAIRS, PER_CALL)]),
                         ("one call", [batch])):
        seconds, scores = {}, {}
        for name, fn in (("before", before), ("after", estimator.predict)):
            fn(batch[:4])  # warm-up
            started = time.perf_counter()
            scores[name] = [s for items in calls for s in fn(items)]
            seconds[name] = time.perf_counter() - started
        worst = max(abs(a - b) for a, b in zip(scores["before"], scores["after"]))
        print(f"COMETKiwi (tiny, CPU), {PAIRS} pairs in {label}: before {PAIRS / seconds['before']:8.1f} pairs/s, "
              f"after {PAIRS / seconds['after']:8.1f} pairs/s, {seconds['before'] / seconds['after']:.2f}x; "
              f"largest score difference {worst:.1e}", flush=True)
        figures.append({"calls": label, "before_pps": round(PAIRS / seconds["before"], 1),
                        "after_pps": round(PAIRS / seconds["after"], 1)})
    return figures


if __name__ == "__main__":
    main()
