"""How a unit's translation is chosen among its candidates: QE reranking (COMETKiwi, the default), MBR
(the candidate that agrees most with the others under a metric) or QE's top k, then MBR among them
(Fernandes et al., 2022; unbabel-comet's `comet-mbr --rerank_top_k`). Declared once: the fields of
FilterOptions (`filters.select`, `filters.mbr_metric`, `filters.mbr_top_k`), so the CLI's flags, the
release config, the UI form and Python callers refuse the same values. Light: pydantic only."""
from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_serializer, model_validator

from xmdata.runtime.params import Params

CHRF = "chrf"
DEFAULT_SELECT = "qe"
# A hub id is org/name (huggingface_hub's rule, simplified); anything else not chrf must be a local path.
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
MBR_FIELDS = ("select", "mbr_metric", "mbr_top_k")
TINY = "tiny:"  # a release config's tiny model (tiny:comet_ref), a local folder before any build (flows/release_refs.py)


class MbrOptions(Params):
    select: Literal["qe", "mbr", "qe_mbr"] = Field(
        DEFAULT_SELECT, description="how the translation is chosen: qe (highest COMETKiwi), mbr (highest expected "
        "utility against the other candidates) or qe_mbr (MBR among QE's top mbr_top_k)")
    mbr_metric: str = Field(CHRF, description="MBR's utility: chrf (sacrebleu) or a reference-based COMET hub id or "
                            "local checkpoint (e.g. Unbabel/wmt22-comet-da)")
    mbr_top_k: int | None = Field(None, ge=2, description="qe_mbr: the candidates QE ranks highest that go to MBR")

    @model_validator(mode="after")
    def _mbr_fields_fit(self):
        if self.select == "qe_mbr" and self.mbr_top_k is None:
            raise ValueError("select qe_mbr needs mbr_top_k (the candidates QE keeps for MBR, >= 2)")
        if self.select != "qe_mbr" and self.mbr_top_k is not None:
            raise ValueError(f"mbr_top_k is only for select qe_mbr (select is {self.select})")
        metric = self.mbr_metric
        if metric != CHRF and not (metric.startswith(("/", "./", "../", "~", TINY)) or "://" in metric
                                   or HUB_ID.fullmatch(metric)):
            raise ValueError(f"mbr_metric {metric!r}: neither chrf nor a reference-based COMET model (a hub id "
                             "org/name or a local checkpoint path)")
        return self

    @model_serializer(mode="wrap")
    def _defaults_left_out(self, handler):
        """At their defaults the MBR fields are not written: a params dump, translate.json and every hash
        made before them stay as they were (tests/cli/test_params_hashes.py)."""
        data = handler(self)
        for name in MBR_FIELDS:
            if name in data and data[name] == type(self).model_fields[name].default:
                del data[name]
        return data

    @property
    def uses_mbr(self) -> bool:
        return self.select != "qe"


def check_mbr_fits(filters, engines) -> None:
    """The rules that need the translators (TranslateParams): MBR needs two candidates per unit, and
    qe_mbr's k no more than the candidates kept (every engine's num_candidates)."""
    if filters is None or not filters.uses_mbr:
        return
    kept = sum(engine.num_candidates for engine in engines)
    if kept < 2:
        raise ValueError(f"select {filters.select}: one candidate per unit is configured (num_candidates {kept}); "
                         "MBR compares at least two")
    if filters.mbr_top_k is not None and filters.mbr_top_k > kept:
        raise ValueError(f"mbr_top_k {filters.mbr_top_k} is more than the {kept} candidates kept per unit")
