"""Warm workers: task attempts forked from a pre-imported zygote instead of started as new interpreters."""
