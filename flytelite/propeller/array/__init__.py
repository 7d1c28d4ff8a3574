"""Array nodes (map tasks): the pieces the array node handler (nodes/array.py) is made of."""
