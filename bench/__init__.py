"""Benchmarks, run on purpose (``.venv/bin/python bench/ingest.py``); never by pytest."""
