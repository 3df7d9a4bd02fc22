"""Certificates: generation for bootstrap and tests, files, and reload without dropping requests."""
