"""`xmdata train distill` at tiny scale on the CPU: optimizer steps per second, the loss, and MMMEB-style
P@1 of the held-out translations finding their English originals, before and after, in one run.

The release: 300 word-for-word QA instances (query and positive, fr and de: 1,200 pairs, a fifth of
the instances held out), made here with models/tiny_corpus.parallel_sentences; the model: the tiny
Llama decoder of `xmdata models build-tiny`. Two settings: the paper's (learning rate 1e-5, effective
batch 128) and one a tiny untrained model moves with (1e-3, effective batch 16, 3 epochs).
"""
from __future__ import annotations

import os
import tempfile

INSTANCES = 300
SETTINGS = {"paper (lr 1e-5, 16 x 8, 1 epoch)": dict(learning_rate=1e-5, loop=dict(batch_size=16, accumulation=8)),
            "tiny (lr 1e-3, 8 x 2, 3 epochs)": dict(learning_rate=1e-3, loop=dict(batch_size=8, accumulation=2,
                                                                                   epochs=3))}


def write_qa_release(folder: str, instances: int) -> str:
    import pyarrow as pa

    from xmdata.models.tiny_corpus import parallel_sentences
    from xmdata.runtime.atomic import write_parquet_atomic
    from xmdata.tasks.release.manifest import write_manifest

    sentences = parallel_sentences(2 * instances, ("fr", "de"), seed=0)
    rows = [{"id": f"inst{i // 2:04d}", "task": "bench", "part": ("query", "positive")[i % 2], "source_language": "en",
             "target_language": lang, "source_text": s["en"], "target_text": s[lang]}
            for i, s in enumerate(sentences) for lang in ("fr", "de")]
    write_parquet_atomic(pa.Table.from_pylist(rows), os.path.join(folder, "data", "qa_parallel.parquet"))
    write_manifest(folder, {"name": "bench-qa"})
    return folder


def main() -> None:
    from xmdata.models.tiny import cached_tiny_models
    from xmdata.tasks.train.distill import train_distill
    from xmdata.tasks.train.params import DistillParams

    decoder = cached_tiny_models(seed=0)["last_token"].name_or_path
    with tempfile.TemporaryDirectory() as tmp:
        release = write_qa_release(os.path.join(tmp, "release"), INSTANCES)
        print(f"{'setting':34} {'steps':>5} {'steps/s':>8} {'loss first':>10} {'loss last':>9} {'P@1 before':>10} {'P@1 after':>9}")
        for n, (name, setting) in enumerate(SETTINGS.items()):
            params = DistillParams.model_validate({"model": decoder, **setting})
            result = train_distill(release, params, os.path.join(tmp, f"run{n}"))
            f = result["figures"]
            first = result_loss(os.path.join(tmp, f"run{n}"))
            print(f"{name:34} {f['optimizer_steps']:>5} {f['steps_per_second']:>8.2f} {first:>10.4f} "
                  f"{f['final_loss']:>9.4f} {f['held_out_p_at_1_before']:>10.3f} {f['held_out_p_at_1_after']:>9.3f}")


def result_loss(run: str) -> float:
    import json

    with open(os.path.join(run, "artifacts", "losses.jsonl"), encoding="utf-8") as log:
        return json.loads(log.readline())["loss"]


if __name__ == "__main__":
    main()
