"""Helpers shared by the end-to-end tests: model builders and a C driver for bundles."""
