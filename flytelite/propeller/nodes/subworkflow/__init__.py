"""Subworkflow nodes: a workflow of the same closure run as the node's sub-DAG."""
