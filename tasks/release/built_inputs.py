"""How a release config names an input the build itself writes, declared once for the flows (release_refs,
release_build, release_config) and the release's tasks below them (embed_images)."""
from __future__ import annotations

IMPORTED = "import:"  # a stage's input written import:<name>/<table>.parquet: the build's import NAME wrote it
DOWNLOADED = "image_download:"  # image_download:images.parquet: a table the build's image_download wrote
DOWNLOAD_FOLDER = "image_download"  # WORK/image_download/: where the build's download-images writes
DOWNLOAD_TABLES = ("images.parquet", "downloads.parquet")  # what a stage may read from it
BUILT = (IMPORTED, DOWNLOADED)  # inputs the build itself writes: checked when read, not before
