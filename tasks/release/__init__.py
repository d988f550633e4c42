"""Releases: the files, manifest, dataset card and upload of a build."""
