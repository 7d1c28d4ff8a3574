"""Task attempts as Kubernetes pods (FlytePropeller's k8s plugin): pod spec, phases, the pod informer, co-pilot."""
