"""Scheduling regression tests: the webhook's decisions judged by an independent model of kube-scheduler."""
