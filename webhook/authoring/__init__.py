"""The template author's tools: test suites beside the templates, JUnit output, the KRM function and
the generated reference. Nothing here runs at admission time."""
