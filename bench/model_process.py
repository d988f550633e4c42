"""CPU-s a model process pays before its first batch (imports + load), per model kind, in one run.

Each figure is one fresh `python` process that loads one tiny model (`xmdata models build-tiny`'s,
CPU) and reports its own user+system CPU (resource.getrusage) from its start:
  library  the library's own public path, unmodified: `from comet import load_from_checkpoint`,
           `open_clip.create_model_and_transforms`, transformers' `from_pretrained`, `fasttext.load_model`;
  xmdata   the backend a Dask worker runs (`registry.get_model`: models/);
  forked   the same backend in a child forked from a process that has already imported what that
           backend imports (what workers forked from a preloaded forkserver would pay: tried, and
           removed for what it cost elsewhere; docs/explanation/light-models.md).
and two floors no backend of that library can go under: `import torch`, and `import torch` +
`transformers.modeling_utils` (every transformers model: it imports torch._dynamo, torchvision and
scipy at module level; see docs/light-models.md). `python -m bench model_process`.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

PROLOGUE = """
import json, resource, sys, warnings
warnings.simplefilter("ignore")
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
"""

# kind -> (registry kind, backend, the library's plain path given the model folder as `path`, what
# the backend imports: preloaded before the fork).
KINDS = {
    "fasttext LID": ("language_identifier", "fasttext", """
import fasttext
from xmdata.models.fasttext_lid import bundled_lid176_path
fasttext.load_model(bundled_lid176_path())""", "import fasttext"),
    "M2M100 translator": ("translator", "m2m100", """
import transformers
transformers.M2M100ForConditionalGeneration.from_pretrained(path).eval()
transformers.M2M100Tokenizer.from_pretrained(path)""",
        "import torch, transformers.models.m2m_100.modeling_m2m_100, transformers.models.m2m_100.tokenization_m2m_100"),
    "MADLAD translator": ("translator", "madlad", """
import transformers
transformers.T5ForConditionalGeneration.from_pretrained(path).eval()
transformers.T5Tokenizer.from_pretrained(path)""",
        "import torch, transformers.models.t5.modeling_t5, transformers.models.t5.tokenization_t5"),
    "COMETKiwi": ("quality_estimator", "cometkiwi", """
from comet import load_from_checkpoint
load_from_checkpoint(path + '/checkpoints/model.ckpt').eval()""", "import torch, comet, pytorch_lightning"),
    "open_clip scorer": ("clip_scorer", "open_clip", """
import glob, open_clip
open_clip.add_model_config(path)
name = glob.glob(path + '/*.json')[0].rsplit('/', 1)[1][:-5]
model, _, preprocess = open_clip.create_model_and_transforms(name, pretrained=path + '/open_clip_model.safetensors')
open_clip.get_tokenizer(name)""", "import torch, open_clip, transformers.models.xlm_roberta.modeling_xlm_roberta"),
    "hf embedder": ("embedder", "hf", """
import transformers
transformers.AutoModel.from_pretrained(path).eval()
transformers.AutoTokenizer.from_pretrained(path)
transformers.AutoImageProcessor.from_pretrained(path, use_fast=False)""",
        "import torch, transformers.models.clip.modeling_clip, transformers.models.clip.image_processing_clip"),
}
FLOORS = {"import torch": "import torch", "import torch + transformers.modeling_utils":
          "import torch, transformers.modeling_utils"}


def backend_code(kind: str, spec: dict) -> str:
    return f"""
from xmdata.models.base import ModelSpec
from xmdata.models.registry import get_model
get_model({kind!r}, ModelSpec(**{spec!r}))"""


def run(code: str, report: str = "print(json.dumps(cpu()))") -> float:
    """CPU-s of a fresh process running `code` (its own count, from its first line)."""
    script = PROLOGUE + textwrap.dedent(code) + "\n" + report + "\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"bench.model_process: a measured process failed:\n{out.stderr[-2000:]}")
    return float(out.stdout.strip().splitlines()[-1])


def forked(preload: str, code: str) -> float:
    """CPU-s of a child forked after `preload`, running `code`: the child's own count only."""
    return run(f"""
import os
{preload}
read, write = os.pipe()
if os.fork() == 0:
    {code.strip().replace(chr(10), chr(10) + '    ')}
    os.write(write, json.dumps(cpu()).encode()); os._exit(0)
os.wait()""", report="print(os.read(read, 64).decode())")


def specs() -> dict[str, dict]:
    from xmdata.models.tiny import cached_tiny_models
    from xmdata.tasks.translation.options import FilterOptions

    tiny = cached_tiny_models(seed=0)
    found = {backend: spec.to_dict() for backend, spec in tiny.items()}
    found["cometkiwi"] = FilterOptions(qe_model=tiny["cometkiwi"].name_or_path).qe_spec().to_dict()
    found["hf"] = found.pop("hf_clip")
    return found


def main() -> list[dict]:
    models = specs()
    for name, code in FLOORS.items():
        print(f"floor  {name:<44} {run(code):6.2f} CPU-s", flush=True)
    figures = []
    for name, (kind, backend, plain, preload) in KINDS.items():
        spec = models[backend]
        path = spec["name_or_path"]
        library = run(f"path = {path!r}\n" + textwrap.dedent(plain))
        ours = run(backend_code(kind, spec))
        child = forked(preload, backend_code(kind, spec))
        print(f"{name:<20} library {library:6.2f} CPU-s   xmdata {ours:6.2f} CPU-s ({ours / library:.2f}x)   "
              f"forked from a preloaded process {child:5.2f} CPU-s ({child / library:.2f}x)", flush=True)
        figures.append({"kind": name, "library_cpu_s": round(library, 2), "xmdata_cpu_s": round(ours, 2),
                        "forked_cpu_s": round(child, 2)})
    return figures


if __name__ == "__main__":
    main()
