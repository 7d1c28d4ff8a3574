"""Task nodes: the handler that runs a node's task through its plugin, and the catalog (cache) around it."""
