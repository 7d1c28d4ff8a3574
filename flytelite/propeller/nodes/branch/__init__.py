"""Branch nodes: the conditions, evaluated on the node's inputs, and the taken arm run as a sub-DAG."""
