"""`xmdata models build-tiny` writes the same bytes whatever CPU kernels the machine has."""
import hashlib
import os
import platform
import subprocess

import pytest
from support.demo_release import BIN, OTHER_KERNELS

pytestmark = pytest.mark.slow  # two builds in processes of their own, ~15 CPU-s each

# Beyond torch's kernels (OTHER_KERNELS): glibc's libm without its AVX2/FMA variants (sentencepiece's
# training calls log and exp) and numpy without its SIMD loops (tiny_init's arithmetic).
OTHER_MATH = {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2,-FMA,-AVX512F",
              "NPY_DISABLE_CPU_FEATURES": "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX2 FMA3 F16C AVX",
              } if platform.machine() in ("x86_64", "AMD64") else {}


def _digests(root):
    return {os.path.relpath(os.path.join(folder, name), root):
            hashlib.sha256(open(os.path.join(folder, name), "rb").read()).hexdigest()
            for folder, _, names in os.walk(root) for name in names}


def _build_tiny(folder, env):
    result = subprocess.run([os.path.join(BIN, "xmdata"), "models", "build-tiny", str(folder)],
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


def test_tiny_models_are_byte_identical_under_other_cpu_kernels(tmp_path):
    """Every file, weights and tokenizers and the COMET checkpoint included. Both builds are made in
    the same folder, one after the other: the COMET and open_clip files name the XLM-R folder by its
    absolute path (release manifests fingerprint them with that path taken out)."""
    other = {**os.environ, **OTHER_KERNELS, **OTHER_MATH}
    probe = subprocess.run([os.path.join(BIN, "python"), "-c",
                            "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                           env=other, capture_output=True, text=True, timeout=300)
    assert probe.stdout.strip() == "DEFAULT", probe.stderr[-2000:]  # the variables do reach torch
    folder = tmp_path / "tiny"
    built = {}
    for side, env in (("default", dict(os.environ)), ("other", other)):
        _build_tiny(folder, env)
        built[side] = _digests(folder)
        folder.rename(tmp_path / side)
    assert len(built["default"]) >= 30 and any(path.endswith(".ckpt") for path in built["default"])
    assert built["other"].keys() == built["default"].keys()
    assert {path for path in built["default"] if built["other"][path] != built["default"][path]} == set()
