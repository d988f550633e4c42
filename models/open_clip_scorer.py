"""open_clip as a ClipScorer: image and text embeddings, L2-normalised, for image-caption scores.

spec.name_or_path is an open_clip model name ("xlm-roberta-base-ViT-B-32") or a local directory
holding one model config JSON (its file stem becomes the model name) and optionally its weights.
Its options are OpenClipOptions, which ScoringParams.spec() fills (the defaults are ScoringParams').
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, Sequence

from xmdata.runtime.params import Params

from .base import ModelError, ModelSpec, hub_error, looks_like_path, resolve_local_path

PRECISION = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
WEIGHT_FILES = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")  # open_clip's own names
_UNKNOWN = object()


class OpenClipOptions(Params):
    """Which weights and how the forward runs. None is "not given", not a choice: a local folder's own
    weights, no autocast (a CPU spec has none; the embedding tiers name weights only when given)."""
    pretrained: str | None = None  # a pretrained tag or a checkpoint path
    autocast: Literal["bfloat16", "float16"] | None = None  # the forward under torch.autocast, on CUDA only


def local_model_config(directory: Path) -> tuple[str, Path | None]:
    """The model name (config file stem) and weights file of a local model directory."""
    configs = [p for p in sorted(directory.glob("*.json")) if {"embed_dim", "vision_cfg", "text_cfg"} <= _keys(p)]
    if len(configs) != 1:
        raise ModelError(f"open_clip: {directory} must hold exactly one open_clip model config JSON, "
                         f"found {[p.name for p in configs]}")
    weights = next((directory / n for n in WEIGHT_FILES if (directory / n).is_file()), None)
    return configs[0].stem, weights


def _keys(path: Path) -> set:
    """The top-level keys of a JSON object file; none for a file that is not one (a broken JSON
    beside the model is then reported as a missing config, not as a JSONDecodeError)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return set(data) if isinstance(data, dict) else set()


def worker_device(device: str) -> str:
    """'cuda' with several GPUs visible: this Dask worker's own GPU (LocalCluster names its workers
    0, 1, …), so N workers on N GPUs do not all land on cuda:0. dask-cuda workers see one GPU each."""
    import torch

    if device != "cuda" or torch.cuda.device_count() <= 1:
        return device
    try:
        from distributed import get_worker

        name = get_worker().name
    except (ImportError, ValueError):  # not inside a Dask worker
        return device
    return f"cuda:{name % torch.cuda.device_count()}" if isinstance(name, int) else device


class OpenClipScorer:
    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.options = spec.typed_options(OpenClipOptions)
        self.model = self.preprocess = self.tokenizer = self.dtype = None
        self.embed_dim = self.context_length = 0
        self.device = spec.device
        self._normalise: Any = _UNKNOWN  # (255, mean, std) on the device, or None: see _mean_std
        self._tensor_recipe: Any = _UNKNOWN  # see tensor_recipe

    def load(self) -> None:
        import open_clip
        import torch

        if self.spec.device.startswith("cuda") and not torch.cuda.is_available():
            raise ModelError(f"open_clip: device {self.spec.device!r} asked for, but no CUDA device is visible")
        self.device = worker_device(self.spec.device)
        name, pretrained = self.spec.name_or_path, self.options.pretrained
        if self.spec.is_local:
            path = Path(resolve_local_path(self.spec))
            name, found_weights = local_model_config(path) if path.is_dir() else (path.stem, None)
            # Re-adding on every load makes this directory's config win over a same-named one.
            open_clip.add_model_config(path)
            pretrained = pretrained or (str(found_weights) if found_weights else None)
        if pretrained and looks_like_path(pretrained):
            pretrained = resolve_local_path(ModelSpec(self.spec.backend, pretrained))
        try:
            # pretrained_text=False: never fetch the text tower's base weights; the checkpoint has them.
            model, _, self.preprocess = open_clip.create_model_and_transforms(
                name, pretrained=pretrained, precision=PRECISION[self.spec.dtype], device=self.device,
                pretrained_text=False)
            self.tokenizer = open_clip.get_tokenizer(name)
            self.embed_dim = open_clip.get_model_config(name)["embed_dim"]
        except Exception as exc:
            if self.spec.is_local:
                raise ModelError(f"open_clip: cannot load {name} from {self.spec.name_or_path}: "
                                 f"{exc}") from exc
            raise hub_error(self.spec, exc) from exc
        self.model = model.eval()
        self.dtype = next(model.parameters()).dtype
        self.context_length = self.tokenizer.context_length

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Untruncated token counts, start and end tokens included: above context_length means cut."""
        cleaned = [self.tokenizer.clean_fn(text) for text in texts]
        hf_tokenizer = getattr(self.tokenizer, "tokenizer", None)  # HFTokenizer wraps a transformers one
        if hf_tokenizer is not None:
            return [len(ids) for ids in hf_tokenizer(cleaned)["input_ids"]] if cleaned else []
        return [len(self.tokenizer.encode(text)) + 2 for text in cleaned]

    def truncated(self, texts: Sequence[str]) -> list[bool]:
        return [n > self.context_length for n in self.token_lengths(texts)]

    def prepare(self, images: Sequence[Any], texts: Sequence[str]) -> tuple[Any, Any]:
        import torch

        pixels = torch.stack([self.preprocess(image) for image in images]).to(self.dtype) if images else None
        tokens = self.tokenizer(list(texts)) if texts else None
        return pixels, tokens

    def stack_pixels(self, pixels: Sequence[Any]):
        """One batch from images a loader already ran through self.preprocess (in its threads)."""
        import torch

        return torch.stack(list(pixels)).to(self.dtype) if pixels else None

    def preprocess_stages(self) -> tuple[Any, Any]:
        """(image part, tensor part) of self.preprocess: its PIL transforms (resize, crop, mode), then
        the rest from the first transform that returns a tensor (ToTensor, Normalize), found by
        running them on a probe image. Lets a CPU loader keep torch ops out of its threads."""
        import torch
        from PIL import Image
        from torchvision.transforms import Compose

        steps = list(getattr(self.preprocess, "transforms", []))
        probe = Image.new("RGB", (64, 48))
        for cut, step in enumerate(steps):
            probe = step(probe)
            if isinstance(probe, torch.Tensor):
                return Compose(steps[:cut]), Compose(steps[cut:])
        return self.preprocess, Compose([])

    def decode_recipe(self):
        """The PIL part of self.preprocess (preprocess_stages) as torch-free steps a decoder process
        runs (models/pil_steps.py): the same PIL calls with the same sizes, read from the
        transform's own fields. A step it does not know travels as it is (`Opaque`)."""
        from torchvision.transforms import CenterCrop, Resize
        from torchvision.transforms.functional import pil_modes_mapping

        from . import pil_steps

        image_part, _ = self.preprocess_stages()
        steps, sizes = [], []
        for step in getattr(image_part, "transforms", [image_part]):
            if isinstance(step, Resize):
                size = (step.size,) if isinstance(step.size, int) else tuple(step.size)
                mode = step.interpolation
                steps.append(pil_steps.Resize(size, mode if isinstance(mode, int) else pil_modes_mapping[mode],
                                              step.max_size))
                sizes += size
            elif isinstance(step, CenterCrop):
                steps.append(pil_steps.CenterCrop(tuple(step.size)))
                sizes += step.size
            elif getattr(step, "__name__", None) == "_convert_to_rgb":  # open_clip < 3: a function
                steps.append(pil_steps.Convert("RGB"))
            elif type(step).__name__ == "MaybeConvertMode" and isinstance(getattr(step, "mode", None), str):
                steps.append(pil_steps.Convert(step.mode))
            else:
                steps.append(pil_steps.Opaque(step))
        return pil_steps.PilRecipe(tuple(steps), max(sizes) if sizes else None)

    def tensor_recipe(self):
        """decode_recipe as tensor ops on the device (models/tensor_steps.py), for decode_mode "device";
        None when a step has no tensor twin (then the stage decodes as in exact mode)."""
        if self._tensor_recipe is _UNKNOWN:
            from .tensor_steps import TensorRecipe

            self._tensor_recipe = TensorRecipe.of(self.decode_recipe())
        return self._tensor_recipe

    def pixels_from_jpegs(self, datas: Sequence[bytes]) -> list[Any]:
        """JPEG file bytes decoded on the model's device (decode_jpeg, one call) and resized and cropped
        there (tensor_recipe): a uint8 CHW tensor each, None for one decode_jpeg refuses. For CUDA; on
        a CPU model libjpeg decodes them in this process."""
        from .tensor_steps import decode_jpegs

        return decode_jpegs(datas, self.device, self.tensor_recipe())

    def pixels_from_uint8(self, arrays: Sequence[Any]):
        """A batch for the image tower from the decoders' uint8 HWC arrays: copied as uint8 (pinned
        and non-blocking on CUDA), then ÷255 and normalised on the model's device — the same float32
        operations as the transform's ToTensor (`.div(255)` on the CPU) and Normalize, so the same bits.
        The ÷255 divides by a float32 255 that lies on the device, never by the Python number: CUDA
        divides by a CPU scalar as a multiplication by its reciprocal (aten's BinaryDivTrueKernel.cu,
        "may lose one bit"; x/255 and x·(1/255) differ in float32 for 126 of the 256 values), by a
        device tensor with a true, correctly rounded division, as the CPU does (Normalize's ÷std is
        already a device tensor's). tests/scoring/test_decoders.py checks it against numpy over all 256
        values. An item may also be a uint8 CHW tensor on the device already (pixels_from_jpegs); the
        order is kept."""
        import numpy as np
        import torch

        if not arrays:
            return None
        mean_std = self._mean_std()
        if mean_std is None:  # a tensor part other than ToTensor + Normalize: run it as it is, on the CPU
            from PIL import Image

            _, tensor_part = self.preprocess_stages()
            return torch.stack([tensor_part(Image.fromarray(_hwc_array(a))) for a in arrays]).to(self.dtype)
        if all(isinstance(a, np.ndarray) for a in arrays):
            batch = self._uint8_to_device(np.stack(arrays))
        else:
            on_host = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray)]
            moved = dict(zip(on_host, self._uint8_to_device(np.stack([arrays[i] for i in on_host])))) if on_host else {}
            batch = torch.stack([moved[i] if i in moved else a.permute(1, 2, 0) for i, a in enumerate(arrays)])
        scale, mean, std = mean_std
        return batch.permute(0, 3, 1, 2).to(torch.float32).div(scale).sub(mean).div(std).to(self.dtype)

    def _uint8_to_device(self, array):
        import torch

        batch = torch.from_numpy(array)
        if self.device.startswith("cuda"):
            batch = batch.pin_memory().to(self.device, non_blocking=True)
        return batch

    def _mean_std(self):
        """(255, mean, std) as float32 tensors on the device, mean and std (1, C, 1, 1), when the
        transform's tensor part is ToTensor then Normalize (its first step checked against to_tensor on
        a probe), else None. The 255 is a tensor there so that ÷255 is a true division on CUDA too."""
        if self._normalise is not _UNKNOWN:
            return self._normalise
        import torch
        from PIL import Image
        from torchvision.transforms import Normalize
        from torchvision.transforms.functional import to_tensor

        _, tensor_part = self.preprocess_stages()
        steps = list(getattr(tensor_part, "transforms", []))
        probe = Image.frombytes("RGB", (5, 3), bytes(range(0, 225, 5)))
        self._normalise = None
        if len(steps) == 2 and isinstance(steps[1], Normalize) and torch.equal(steps[0](probe), to_tensor(probe)):
            self._normalise = tuple(torch.as_tensor(v, dtype=torch.float32, device=self.device).view(1, -1, 1, 1)
                                    for v in ((255.0,), steps[1].mean, steps[1].std))
        return self._normalise

    def default_batch_size(self) -> int:
        """Pairs per forward when a run does not say: CPU caches like small batches, GPUs large ones."""
        import torch

        if not self.device.startswith("cuda"):
            return 32
        return 256 if torch.cuda.get_device_properties(self.device).total_memory >= 40 * 2**30 else 64

    def predict(self, batch: tuple[Any, Any], pad_to: int | None = None):
        """A batch shorter than pad_to is padded up to it with copies of its last row: kernels are
        picked by shape (cuBLAS's, and on CPU oneDNN's and MKL's), so with one shape a row's embedding
        does not depend on its batch-mates (tests/models/test_batch_independence.py, on two sets of
        CPU kernels; without it, other batch sizes moved every embedding by ~1e-7). The scoring
        stage fills its batches itself, as every model stage does (score.embed_with_backoff)."""
        import torch

        pixels, tokens = batch
        with torch.inference_mode(), self._autocast():
            return (self._embed(self.model.encode_image, pixels, pad_to),
                    self._embed(self.model.encode_text, tokens, pad_to))

    def _autocast(self):
        import contextlib

        import torch

        if self.options.autocast and self.device.startswith("cuda"):
            return torch.autocast("cuda", dtype=getattr(torch, self.options.autocast))
        return contextlib.nullcontext()

    def _embed(self, encode, inputs, pad_to: int | None):
        import numpy as np
        import torch

        if inputs is None:
            return np.zeros((0, self.embed_dim), dtype=np.float32)
        n = len(inputs)
        if pad_to and n < pad_to:
            inputs = torch.cat([inputs, inputs[-1:].expand(pad_to - n, *inputs.shape[1:])])
        return encode(inputs.to(self.device, non_blocking=True), normalize=True)[:n].float().cpu().numpy()


def _hwc_array(pixels: Any):
    """A uint8 HWC numpy array of a decoder's array, or of a uint8 CHW tensor (pixels_from_jpegs)."""
    import numpy as np

    return pixels if isinstance(pixels, np.ndarray) else pixels.permute(1, 2, 0).cpu().numpy()
