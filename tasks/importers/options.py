"""The options of `xmdata import`, declared once: the CLI's flags are built from this model, and the
adapters receive it. Each option names the formats that read it; others ignore it."""
from __future__ import annotations

from pydantic import Field, field_validator

from xmdata.runtime.params import Params


class ImportOptions(Params):
    subsets: str | None = Field(None, description="openimages: keep these Subset values, comma-separated "
                                "(the paper used validation,test); mmeb-train, hf: these subset folders or splits")
    coordinates: str | None = Field(None, description="openimages: table of ImageID, Latitude, Longitude "
                                    "(CSV/Parquet/JSONL; --map renames its columns too)")
    images: str | None = Field(None, description="folder of the downloaded images: paths are written relative "
                               "to it and checked; openimages reads GPS from their EXIF when no coordinates row has it")
    captions: str | None = Field(None, description="flickr8k-expert, flickr8k-cf: Flickr8k.token.txt "
                                 "(default: next to the annotations file)")
    language: str | None = Field(None, description="language of the texts when the layout does not say "
                                 "(flickr8k-*, vicr, composite, pascal50s, valse, flickr30k-entities: default en; "
                                 "xvnli: for a folder that is no language code; marvl: for lines without one)")
    split: str | None = Field(None, description="mmeb-train: the split read in every subset (default: train, else "
                              "original, as xVLM2Vec read them; the hub's folders also hold diverse_instruction); "
                              "vicr: keep the pairs of this split only (train, val or test; default: all)")
    table: str | None = Field(None, description="hf: contract the table must meet (captions, images, "
                              "qa_input, score_input, …); default: none, columns kept as they are")
    valid_only: bool = Field(False, description="valse: keep only instances at least two of three annotators "
                             "validated (mturk.caption >= 2), as the VALSE authors advise")
    translate_test: bool = Field(False, description="xvnli, marvl: import the translate-test files "
                                 "(annotations_machine-translate/: the test sets machine-translated into English) "
                                 "instead of the human-written ones; rows are labelled en, source_language says "
                                 "which test set each came from")
    own_references: bool = Field(False, description="flickr8k-expert: keep the pairs whose candidate is one of the "
                                 "image's own captions, marked own_reference (CLIPScore's evaluation leaves these 158 "
                                 "out; their count is in the report either way)")
    english_names: str | None = Field(None, description="imagenet-val: file of the 1,000 English class names in class "
                                      "index order, one a line (e.g. CLIP's), used for en instead of "
                                      "babel_imagenet.json's BabelNet names")

    @field_validator("language")
    @classmethod
    def _one_code_system(cls, value: str | None) -> str | None:
        from xmdata.schemas.languages import language_code  # schemas imports pyarrow: --help stays light

        return None if value is None else language_code(value, "language")


OPTION_HELP = {name: field.description for name, field in ImportOptions.model_fields.items()}
