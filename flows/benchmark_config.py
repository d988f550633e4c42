"""The `benchmarks:` section of a release config (multilingual CLIPScore): benchmark sets imported with
human judgements or labels, the English ones translated (beam candidates -> LID -> COMETKiwi), every
pair scored with one CLIP model, and each set evaluated with its metric, all in one release."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from xmdata.runtime.params import Strict
from xmdata.tasks.evaluation.params import metric_params
from xmdata.tasks.stage_params import ScoringParams

from xmdata.tasks.translation.options import FilterOptions, TranslatorOptions


# The table a benchmark set reads from its import, by import format: scored pairs with judgements, or
# VICR's rated pairs (whose every split is translated and published as the release's rated_pairs table).
RATED = "rated_pairs"  # schemas/ratings.py RATED_PAIRS (not imported here: this module is pydantic only)
SET_TABLES = {**{fmt: "pairs" for fmt in ("flickr8k-expert", "flickr8k-cf", "composite", "pascal50s", "valse",
                                          "xvnli", "marvl")}, "vicr": RATED}


class BenchmarkSet(Strict):
    source: str = Field(description="an import of the config whose pairs (rated_pairs for vicr) hold the set")
    metric: Literal["correlation", "valse", "xvnli", "marvl", "pascal50s"]
    images: str = Field(description="the folder its image paths are under (relative to the config)")
    translate: bool = Field(True, description="English sets: translate into every target (natively "
                            "multilingual sets, XVNLI and MaRVL, are scored as they are)")
    options: dict = Field(default_factory=dict, description="the metric's options, as `xmdata evaluate` names them")

    @model_validator(mode="after")
    def _known_options(self):
        metric_params(self.metric, self.options)  # a misspelt option stops the config, not the build
        return self


class BenchmarksConfig(ScoringParams):
    """The sets, how the English ones are translated, and (as ScoringParams) how every pair is scored."""
    sets: dict[str, BenchmarkSet]
    targets: list[str] = Field(min_length=1)
    translator: TranslatorOptions = TranslatorOptions()
    filters: FilterOptions = FilterOptions()
    references: bool = Field(True, description="score RefCLIPScore too where a set has references (`refs`)")
