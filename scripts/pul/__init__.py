"""The Play Under Load lab driver (Python 3 standard library only)."""
