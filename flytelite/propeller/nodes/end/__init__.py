"""The end node: the workflow's outputs, gathered from its bindings."""
