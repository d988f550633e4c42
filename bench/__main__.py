"""Run every benchmark (or those named: `python -m bench orchestration`) and print their figures."""
import importlib
import sys

BENCHMARKS = ["orchestration", "geo_selection", "translation", "evaluation", "scoring", "scoring_loader", "device_decode", "qa_extraction", "storage", "idle_memory", "idle_cpu",
              "clean_images", "clean_captions", "clean_sets", "model_process",
              "memory_scaling", "light", "train_distill", "first_demo", "incremental", "memo_scale", "plumbing", "slurm",
              "embed_images", "mbr", "llm_translation"]

if __name__ == "__main__":
    # `python -m bench NAME --flag …`: one benchmark and its own flags (it reads them from sys.argv);
    # names alone: each in turn; none: all.
    named = sys.argv[1:]
    if any(arg.startswith("-") for arg in named):
        named = named[:1]
    for name in named or BENCHMARKS:
        print(f"== bench.{name}", flush=True)
        importlib.import_module(f"bench.{name}").main()
