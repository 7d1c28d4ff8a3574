"""The local-process plugin: task attempts as processes on this machine (plugin.py), started cold (cold.py) or
forked warm from a zygote (warm.py, through the warm workers of workers/), with folders of their own
(folders.py) that a background thread deletes once the attempt is over (cleaner.py)."""
