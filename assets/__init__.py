"""Dagster assets, checks, sensors and schedules: thin shells over chatetl's library."""
