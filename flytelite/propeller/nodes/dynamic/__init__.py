"""Dynamic nodes: a task that returns a workflow (futures.pb), compiled and run as the node's sub-DAG."""
