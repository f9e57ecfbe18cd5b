"""Exported files: one writer per format, file names safe on every file system."""
