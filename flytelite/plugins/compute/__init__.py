"""The compute plugins: task types that run on a distributed engine (flyteplugins' k8s/spark, ray, dask and
kfoperators/pytorch), here on this machine, on an engine started for each attempt (launcher.py), or on a running
cluster named in the configuration."""
