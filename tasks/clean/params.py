"""The options of `xmdata dedup` and `xmdata contamination`, declared once: the CLI's flags, the flows'
parameter (the Prefect UI's form), the release config's `dedup:` and `contamination:` sections and
what the stages run with. Light (pydantic only): the CLI builds its flags from it before any import
of numpy, faiss or datasketch.

The model-free tiers are on by default (perceptual hashes for images; normalised exact text and
MinHash for captions); the embedding tier runs when a model is named. Where each default threshold
comes from is said beside it (the bench that measured it).
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from xmdata.runtime.params import Params
from xmdata.tasks.stage_params import DEFAULT_MAX_PIXELS, MaxImagePixels, Pretrained

# Images, model-free: a 64-bit DCT hash of 81 views (each side cut by 0, 2.5 or 5 %); a pair matches at
# <= this many differing bits between one's whole view and the other's closest view. Measured by
# `./run bench clean_images` on 19 real photographs that scikit-image and matplotlib ship, 608 copies
# (resized 50 %, JPEG q55-60, brightness +-12 %, cut up to 5 % from any sides, all at once): at 8 bits
# 99.2 % of copies are found (missed: 5 crops of a brick wall and a page of text), at 10 bits all; the
# nearest of 45,835 unrelated pairs lies 12 bits apart. 8 keeps two steps from them (a hash has 32 bits
# set, so distances are even: 9 acts as 8).
DEFAULT_MAX_HASH_BITS = 8
# Captions: MinHash of character 4-grams (one rule for every script, CJK and Thai included), LSH
# candidates verified by their exact Jaccard. `./run bench clean_captions` on the real captions the
# project ships (93 in 26 languages, 545 planted edits, 515 distinct same-language pairs): at 0.6,
# recall 0.92 with 4-grams, one distinct pair above (a Japanese caption contained in a longer one).
DEFAULT_NGRAM = 4
DEFAULT_MIN_JACCARD = 0.6
DEFAULT_NUM_PERM = 128  # datasketch's default; 25 bands of 5 rows at 0.6 (text_match.lsh_bands)
# Embedding tier: clip-retrieval's own near-duplicate cut for CLIP embeddings, clip_back.py
# get_non_uniques(threshold=0.94) (rom1504/clip-retrieval @ b05533561e801db4fcfb5af0743321e8654f2f01);
# chosen over the 0.95 tuned for copy-detection (SSCD) descriptors: the references this reads are CLIP
# embeddings, and a threshold belongs to its embedding space.
DEFAULT_MIN_COSINE = 0.94
DEFAULT_MAX_MATCHES = 10


class CleanParams(Params):
    image_hash: bool = Field(True, description="images: match perceptual hashes of several crops and scales "
                             "(model-free; finds resized, re-encoded, brightened and cropped copies)")
    max_hash_bits: int = Field(DEFAULT_MAX_HASH_BITS, ge=0, le=32,
                               description="images: a pair matches at most this many of 64 hash bits apart")
    exact_text: bool = Field(True, description="captions: match texts equal after NFKC, case folding, "
                             "punctuation and whitespace removal")
    minhash: bool = Field(True, description="captions: MinHash/LSH near-duplicates of the normalised texts")
    min_jaccard: float = Field(DEFAULT_MIN_JACCARD, gt=0, le=1,
                               description="captions: a pair matches at this Jaccard similarity of its shingles")
    num_perm: int = Field(DEFAULT_NUM_PERM, ge=16, le=1024, description="captions: MinHash permutations")
    model: str | None = Field(None, description="embedding tier: an open_clip model name or local folder; its "
                              "image tower for images, its (multilingual) text tower for captions in contamination")
    model_backend: Literal["open_clip", "copy_detection"] = Field(
        "open_clip", description="embedding tier: open_clip (image and text towers), or copy_detection: an image "
        "copy-detection model saved as TorchScript, e.g. SSCD's *.torchscript.pt (images only; SSCD's README puts "
        "copies of sscd_disc_mixup at cosine > 0.75)")
    pretrained: Pretrained = None  # the embedding tier's model's
    reference_model: str | None = Field(None, description="the model that made a clip-retrieval embeddings "
                                        "reference (such a folder does not record it); the input is embedded "
                                        "with it to search that reference")
    min_cosine: float = Field(DEFAULT_MIN_COSINE, ge=-1, le=1,
                              description="embedding tier: a pair matches at this cosine similarity")
    max_matches: int = Field(DEFAULT_MAX_MATCHES, ge=1, le=1000,
                             description="at most this many matches a row, best first")
    max_image_pixels: MaxImagePixels = DEFAULT_MAX_PIXELS

    @model_validator(mode="after")
    def _some_tier(self):
        if not (self.image_hash or self.exact_text or self.minhash or self.model or self.reference_model):
            raise ValueError("every tier is off: keep one of image_hash, exact_text, minhash, or name a model")
        return self

    def tiers(self, kind: str, against_embeddings: bool = False) -> list[str]:
        """The methods that run on a KIND ('images' or 'captions') table, in the order they are reported."""
        if kind == "images":
            methods = ["image_hash"] if self.image_hash else []
            return methods + (["image_embedding"] if self.model or (against_embeddings and self.reference_model) else [])
        methods = (["exact_text"] if self.exact_text else []) + (["minhash"] if self.minhash else [])
        return methods + (["text_embedding"] if self.model or (against_embeddings and self.reference_model) else [])
