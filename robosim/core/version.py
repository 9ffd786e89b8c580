"""robosim's version, on the ground floor so that any layer can name it without importing
the top package `robosim` (tests/test_layers_static.py). setup.cfg reads it from here."""

__version__ = "0.1.0"
