"""The sections of a release config (flows/release_config.py): each stage's section is its params (one
declaration: tasks/stage_params.py, tasks/translation/params.py, tasks/images/params.py) plus the
inputs it reads; the CLI's flags and the flows' forms come from the same params. `imports:` entries too."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from xmdata.tasks.clean.params import CleanParams
from xmdata.tasks.images.params import DownloadImagesParams
from xmdata.tasks.importers.formats import FORMATS
from xmdata.tasks.importers.options import ImportOptions
from xmdata.tasks.stage_params import LanguageIdParams, ScoringParams, SelectImagesParams
from xmdata.tasks.translation.params import TranslateParams, TranslateQaParams


class ImportConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: str = Field(description="an `xmdata import` format")
    source: str = Field(description="the download, in its published layout (relative to the config)")
    options: ImportOptions = ImportOptions()

    @field_validator("format")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in FORMATS:
            raise ValueError(f"unknown import format {value!r}; known: {', '.join(FORMATS)}")
        return value


class ImageDownloadConfig(DownloadImagesParams):
    input: str = Field(description="URL table (Parquet, CSV, JSONL) with the url_column; every column is kept")


class LanguageIdConfig(LanguageIdParams):
    input: str = Field(description="captions: id, text [, language, image_id]")


class ImageSelectionConfig(SelectImagesParams):
    input: str = Field(description="images: id, latitude, longitude [, path, url, license]")


class TranslationConfig(TranslateParams):
    input: str
    only_source_language: bool = Field(True, description="translate only rows whose `language` is the source")


class QATranslationConfig(TranslateQaParams):
    input: str


class ScoringConfig(ScoringParams):
    input: str = Field(description="captions: id, text, image_id [, language]")
    images: str = Field(description="images table whose `path` column the captions' image_id points at")
    include_translations: bool = True


class DedupConfig(CleanParams):
    """Near-duplicates among the release's own images (image_selection.input) and captions (language_id,
    translation and scoring inputs), removed before any stage selects, translates or scores them."""


class ContaminationConfig(CleanParams):
    against: list[str] = Field(min_length=1, description="references (training data): image folders, images or "
                               "captions tables, release folders, clip-retrieval embeddings folders; relative to "
                               "the config")
