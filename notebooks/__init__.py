"""Analyst notebooks, installed as package data of ``burstlake.notebooks`` (docs/design.md,
"Packaging"); ``burstlake demo`` executes ``spatial_burstiness.ipynb`` on the lake."""
