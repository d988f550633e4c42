#!/usr/bin/env bash
# Issue 47's device run, on a GPU machine's own python3 (torch, transformers, numpy there), with the
# project and its missing pure-Python dependencies carried as wheels in .whl/ (see docs/explanation/performance.md, GPU figures).
# Writes env.txt, tests.log, figures.log and figures.json under $OUT (default: ./gpu-out).
#   bash bench/gpu_check.sh            # everything
#   GPU_SKIP_TESTS=1 bash bench/gpu_check.sh   # the figures only
set -u -o pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 TOKENIZERS_PARALLELISM=false
PY=${PY:-python3}

# Carried wheels into /tmp/site; the project as the package xmdata (its folders mapped as setup does).
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
# In the folder xmdata/ itself: python -m and pytest put the working folder first on sys.path, so
# a package assembled elsewhere would lose to ./xmdata. The links stay on the device's copy.
for d in runtime flows tasks schemas models data; do [ -e "xmdata/$d" ] || ln -s "../$d" "xmdata/$d"; done
[ -d .gpu-tiny ] && export XMDATA_GPU_TINY=$PWD/.gpu-tiny
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}

{
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  $PY -c "import torch, transformers, numpy, open_clip, xmdata; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(), '| transformers', transformers.__version__, '| numpy', numpy.__version__, '| open_clip', open_clip.__version__, '| xmdata from', xmdata.__file__)"
  echo "libcublas (CTranslate2 4.x wants libcublas.so.12):"; ldconfig -p | grep -E 'libcublas\.so' || true
  find / -xdev -name 'libcublas.so.1[23]*' 2>/dev/null | head -5
} 2>&1 | tee "$OUT/env.txt"

if [ -z "${GPU_SKIP_TESTS:-}" ]; then
  echo "== gpu tests"
  timeout 200 $PY -m pytest -m gpu tests/models/test_cuda_gpu.py -p no:cacheprovider -p no:xdist \
      -o addopts= -q -rA -s --timeout 120 2>&1 | tee "$OUT/tests.log"
  if grep -q "while loading conftest" "$OUT/tests.log"; then  # tests/conftest.py's imports (Prefect) failed
    echo "== gpu tests again without tests/conftest.py" | tee -a "$OUT/tests.log"
    timeout 200 $PY -m pytest -m gpu tests/models/test_cuda_gpu.py --confcutdir tests/models -p no:cacheprovider \
        -p no:xdist -o addopts= -q -rA -s --timeout 120 2>&1 | tee -a "$OUT/tests.log"
  fi
fi

echo "== figures"
timeout "${GPU_FIGURES_TIMEOUT:-320}" $PY -m bench.gpu_figures "$OUT/figures.json" 2>&1 | tee "$OUT/figures.log"
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm,power.draw --format=csv | tee -a "$OUT/env.txt"
