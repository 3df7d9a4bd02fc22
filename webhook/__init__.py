"""gpu-webhook: right-size GPU requests to MIG slices and reject wrong accelerator requests."""

__version__ = "0.1.0"
