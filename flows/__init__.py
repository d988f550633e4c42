"""Flows: one file per dataset build, each reading top to bottom like a recipe."""
