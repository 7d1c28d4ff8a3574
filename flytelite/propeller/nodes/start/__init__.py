"""The start node: the workflow's inputs are its outputs."""
