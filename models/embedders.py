"""Embedders: texts and images into one space, L2-normalised, for MMMEB. Backends behind one
interface (load, embed_texts, embed_images): open_clip (through OpenClipScorer, so the same names,
local folders and tiny models work), any Hugging Face model with `get_text_features` and
`get_image_features` (CLIP, SigLIP and their multilingual checkpoints) given by hub id or local path,
and a decoder's last-token state (`last_token`, text only: what `xmdata train distill` trains).
None takes an image and a text in one input, so VQA and VG queries are not theirs to embed."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .base import ModelError, ModelSpec, hub_error, resolve_local_path

BATCH = 32


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms == 0, 1, norms)).astype(np.float32)


class OpenClipEmbedder:
    def __init__(self, spec: ModelSpec):
        from .open_clip_scorer import OpenClipScorer

        self.spec, self.scorer = spec, OpenClipScorer(spec)

    def load(self) -> None:
        self.scorer.load()

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        parts = [self.scorer.predict(self.scorer.prepare([], texts[i:i + BATCH]))[1] for i in range(0, len(texts), BATCH)]
        return _unit(np.concatenate(parts)) if parts else np.zeros((0, self.scorer.embed_dim), np.float32)

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        parts = [self.scorer.predict(self.scorer.prepare(images[i:i + BATCH], []))[0] for i in range(0, len(images), BATCH)]
        return _unit(np.concatenate(parts)) if parts else np.zeros((0, self.scorer.embed_dim), np.float32)

    def decode_recipe(self):
        """The PIL part of the model's preprocess, for the decoder processes (models/pil_steps.py)."""
        return self.scorer.decode_recipe()

    def embed_pixels(self, arrays: Sequence[np.ndarray]) -> np.ndarray:
        """embed_images of images the decoders ran through decode_recipe: the same bits."""
        parts = [self.scorer.predict((self.scorer.pixels_from_uint8(arrays[i:i + BATCH]), None))[0]
                 for i in range(0, len(arrays), BATCH)]
        return _unit(np.concatenate(parts)) if parts else np.zeros((0, self.scorer.embed_dim), np.float32)


def _from_pretrained(spec: ModelSpec, backend: str, with_processor: bool) -> tuple[str, tuple]:
    """(name, (model, tokenizer, image processor or None)) of a transformers embedder, in eval mode on
    its device; a ModelError naming the folder, or the hub's error, when it cannot load."""
    from transformers import AutoImageProcessor, AutoModel, AutoTokenizer

    name = resolve_local_path(spec) if spec.is_local else spec.name_or_path
    try:
        kwargs = {} if spec.is_local else {"revision": spec.revision}
        model = AutoModel.from_pretrained(name, **kwargs).eval().to(spec.device)
        tokenizer = AutoTokenizer.from_pretrained(name, **kwargs)
        processor = AutoImageProcessor.from_pretrained(name, use_fast=False, **kwargs) if with_processor else None
    except Exception as exc:
        if spec.is_local:
            raise ModelError(f"{backend} embedder: cannot load {name}: {exc}") from exc
        raise hub_error(spec, exc) from exc
    return name, (model, tokenizer, processor)


class HfEmbedder:
    """transformers AutoModel + AutoTokenizer + AutoImageProcessor (separately: a multilingual text tower
    often has another tokenizer than its vision model's processor expects)."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.model = self.tokenizer = self.processor = None

    def load(self) -> None:
        name, (self.model, self.tokenizer, self.processor) = _from_pretrained(self.spec, "hf", with_processor=True)
        if not (hasattr(self.model, "get_text_features") and hasattr(self.model, "get_image_features")):
            raise ModelError(f"hf embedder: {name} has no get_text_features/get_image_features (not a CLIP-like model)")

    def text_length(self) -> int:
        """Tokens per text: the position table's size, or the tokenizer's limit when lower (an
        XLM-R tower has 514 positions for 512 tokens: two are the padding offset)."""
        positions = self.model.config.text_config.max_position_embeddings
        return min(positions, getattr(self.tokenizer, "model_max_length", None) or positions)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        parts = []
        for i in range(0, len(texts), BATCH):
            tokens = self.tokenizer(list(texts[i:i + BATCH]), padding="max_length", truncation=True,
                                    max_length=self.text_length(),
                                    return_tensors="pt").to(self.spec.device)
            with torch.inference_mode():
                parts.append(self.model.get_text_features(input_ids=tokens["input_ids"],
                                                          attention_mask=tokens.get("attention_mask")).float().cpu().numpy())
        return _unit(np.concatenate(parts)) if parts else np.zeros((0, self.model.config.projection_dim), np.float32)

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        import torch

        parts = []
        for i in range(0, len(images), BATCH):
            pixels = self.processor(images=list(images[i:i + BATCH]), return_tensors="pt")["pixel_values"]
            with torch.inference_mode():
                parts.append(self.model.get_image_features(pixel_values=pixels.to(self.spec.device)).float().cpu().numpy())
        return _unit(np.concatenate(parts)) if parts else np.zeros((0, self.model.config.projection_dim), np.float32)


class LastTokenEmbedder:
    """A decoder-only embedding model (VLM2Vec's way): the final hidden state of each text's last token
    (not an added end-of-sequence token), L2-normalised; transformers AutoModel + AutoTokenizer, by hub
    id or local path (what `xmdata train distill` writes). Text only: this backend feeds no image."""

    modalities = ("text",)

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.model = self.tokenizer = None

    def load(self) -> None:
        _, (self.model, self.tokenizer, _) = _from_pretrained(self.spec, "last_token", with_processor=False)
        if self.tokenizer.pad_token is None:  # pooled by index: the padding token's value never matters
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        parts = []
        for i in range(0, len(texts), BATCH):
            with torch.inference_mode():
                parts.append(last_token_states(self.model, self.tokenizer, list(texts[i:i + BATCH]),
                                               self.spec.option("max_length", 512)).float().cpu().numpy())
        return _unit(np.concatenate(parts)) if parts else np.zeros((0, self.model.config.hidden_size), np.float32)

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        if len(images):
            raise ModelError("last_token embedder: a text-only decoder embeds texts, not images")
        return np.zeros((0, self.model.config.hidden_size), np.float32)


def last_token_states(model, tokenizer, texts: list[str], max_length: int):
    """(len(texts), hidden) final hidden states at each text's last real token (found from the attention
    mask). Padded on the right: with causal attention a text's states are then the same in any batch.
    Gradients flow when called outside inference mode (training)."""
    import torch

    tokenizer.padding_side = "right"
    tokens = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    tokens = {k: v.to(model.device) for k, v in tokens.items() if k in ("input_ids", "attention_mask")}
    hidden = model(**tokens).last_hidden_state
    mask = tokens["attention_mask"]
    positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
    last = (positions * mask).argmax(dim=1)  # the rightmost position the mask keeps
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


class CopyDetectionEmbedder:
    """An image copy-detection model saved as TorchScript (SSCD's published `*.torchscript.pt`), loaded
    with torch.jit.load alone: no code of its project. Preprocessing as its README recommends for batches
    (facebookresearch/sscd-copy-detection, "Preprocessing"): resize to a 320x320 square (skewed), ImageNet
    mean and std; descriptors L2-normalised. It embeds images only."""

    SIDE = 320
    MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)

    def __init__(self, spec: ModelSpec):
        self.spec, self.model = spec, None

    def load(self) -> None:
        import torch

        import warnings

        path = resolve_local_path(self.spec)
        try:
            with warnings.catch_warnings():  # torch deprecates TorchScript; SSCD publishes its models in it
                warnings.simplefilter("ignore", DeprecationWarning)
                self.model = torch.jit.load(path, map_location=self.spec.device).eval()
        except (RuntimeError, ValueError, OSError) as exc:
            raise ModelError(f"copy_detection: {path} is not a TorchScript model ({' '.join(str(exc).split())[:200]})") from exc

    def embedding_dim(self) -> int:
        return int(self.embed_images([_blank(self.SIDE)]).shape[1])

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        raise ModelError("copy_detection: a copy-detection model embeds images, not texts")

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        recipe = self.decode_recipe()
        return self.embed_pixels([recipe(image) for image in images])

    def decode_recipe(self):
        """RGB, resized to SIDE x SIDE (bilinear): the PIL part, which the decoder processes run."""
        from .pil_steps import Convert, PilRecipe, Resize

        return PilRecipe((Convert("RGB"), Resize((self.SIDE, self.SIDE), _bilinear())), self.SIDE)

    def embed_pixels(self, arrays: Sequence[np.ndarray]) -> np.ndarray:
        import torch

        mean, std = torch.tensor(self.MEAN).view(3, 1, 1), torch.tensor(self.STD).view(3, 1, 1)
        parts = []
        for i in range(0, len(arrays), BATCH):
            pixels = torch.stack([(torch.from_numpy(np.asarray(a, np.float32) / 255.0).permute(2, 0, 1) - mean) / std
                                  for a in arrays[i:i + BATCH]])
            with torch.inference_mode():
                parts.append(self.model(pixels.to(self.spec.device)).float().cpu().numpy())
        return _unit(np.concatenate(parts)) if parts else np.zeros((0, 0), np.float32)


def _blank(side: int):
    from PIL import Image

    return Image.new("RGB", (side, side))


def _bilinear():
    from PIL import Image

    return Image.Resampling.BILINEAR
