"""Array nodes (map tasks): the handler and the pieces it is made of (state, items, data, progress)."""
