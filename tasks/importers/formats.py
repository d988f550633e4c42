"""Every import format by name: the module and function of its adapter, and one line for --help.
Pure data (no heavy imports), so the CLI lists formats without loading any adapter."""
from __future__ import annotations

import importlib

FORMATS = {
    "xm3600": ("xm3600:read_xm3600", "Crossmodal-3600 captions.jsonl -> captions (one row per image x "
               "language x caption) and images"),
    "openimages": ("openimages:read_openimages", "Open Images image metadata CSVs (+ coordinates table or "
                   "EXIF) -> images"),
    "mmeb-train": ("mmeb_train:read_mmeb_train", "MMEB-train, a folder per subset (Parquet, JSON/JSONL or a "
                   "datasets save) -> qa_input"),
    "flickr8k-expert": ("flickr8k:read_expert", "Flickr8K ExpertAnnotations.txt + Flickr8k.token.txt -> pairs "
                        "with the mean of the three expert ratings"),
    "flickr8k-cf": ("flickr8k:read_crowdflower", "Flickr8K CrowdFlowerAnnotations.txt + Flickr8k.token.txt -> "
                    "pairs with the share of yes votes"),
    "composite": ("composite:read_composite", "Composite *_correctness.csv (AMT, ';'-separated) -> pairs "
                  "with their correctness rating"),
    "pascal50s": ("pascal50s:read_pascal50s", "Pascal-50S pair_pascal.mat + consensus_pascal.mat -> pairs "
                  "with votes per caption"),
    "valse": ("valse:read_valse", "VALSE <piece>.json files -> caption and foil pairs (ids <piece>/<key>)"),
    "xvnli": ("iglue:read_xvnli", "IGLUE XVNLI annotations/<lang>/test.jsonl -> hypothesis pairs "
              "(--translate-test: annotations_machine-translate/ instead)"),
    "marvl": ("iglue:read_marvl", "IGLUE MaRVL zero_shot/annotations/marvl-<lang>.jsonl -> left and right "
              "image pairs (--translate-test: the _gmt files instead)"),
    "xtd10": ("xtd10:read_xtd10", "XTD10 repository (XTD10/, MIC/, STAIR/: 11 languages) -> captions and "
              "images"),
    "imagenet-val": ("imagenet_val:read_imagenet_val", "ImageNet-1k LOC_val_solution.csv + LOC_synset_mapping.txt "
                     "+ Babel-ImageNet babel_imagenet.json -> images with their class, multilingual labels"),
    "maxm": ("maxm:read_maxm", "MaXM v1 <lang>.json -> qa (question, first answer, image)"),
    "flickr30k-entities": ("flickr30k_entities:read_flickr30k_entities", "Flickr30k Entities Sentences/ + "
                           "Annotations/ + test.txt -> phrases with their entity's box"),
    "vicr": ("vicr:read_vicr", "VICR ratings CSV (image URL, caption, subset, num_ratings, ratings…) -> rated_pairs "
             "with the mean and every 1-5 rating and the train/val/test split"),
    "hf": ("hf:read_hf", "a local Hugging Face datasets folder (save_to_disk) or Parquet snapshot -> one table"),
}


def adapter(fmt: str):
    """The adapter function of a format: (source, ImportOptions) -> Imported."""
    module, _, function = FORMATS[fmt][0].partition(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), function)
