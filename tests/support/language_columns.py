"""Every language column of a release, checked against the project's one code system."""
import glob
import os

import pyarrow.parquet as pq

from xmdata.schemas.languages import LANGUAGE_COLUMNS, is_normalised

# Columns that hold a code of the project's system (a model's own label is lid_label_raw, kept as it gave it).
CODE_COLUMNS = (*LANGUAGE_COLUMNS, "target_language", "lid_label")


def language_code_problems(release) -> list[str]:
    """`table.column: code` for every code in a published table that the normaliser would change or refuse."""
    problems = []
    for path in sorted(glob.glob(os.path.join(str(release), "data", "*.parquet"))):
        table = pq.read_table(path)
        for column in (c for c in CODE_COLUMNS if c in table.column_names):
            bad = sorted({v for v in table.column(column).to_pylist() if v is not None and not is_normalised(v)})
            problems += [f"{os.path.basename(path)}.{column}: {v!r}" for v in bad]
    return problems
