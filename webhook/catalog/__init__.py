"""templates/ + policies/ YAML -> validated, immutable Catalog; every error with file and field path."""

from webhook.catalog.loader import CatalogError, Problem, lint_paths, load_catalog

__all__ = ["CatalogError", "Problem", "load_catalog", "lint_paths"]
