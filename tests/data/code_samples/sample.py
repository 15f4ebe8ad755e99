import os
from pathlib import Path

LIMIT = 3


@cache_result
def read_config(path):
    """Read the configuration file."""
    return Path(path).read_text()


class Store:
    """Keeps records."""

    def save(self, record):
        self.records.append(record)

    def count(self):
        return len(self.records)
