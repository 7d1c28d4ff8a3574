"""The compute plugins: task types that run on a distributed engine (flyteplugins' k8s/spark, ray, dask), here on
this machine, on an engine started for each attempt or on a running cluster named in the configuration."""
