import pathlib

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU; this machine has none")


@pytest.fixture
def root() -> pathlib.Path:
    return ROOT


KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def code_cell(source: str, metadata: dict | None = None) -> dict:
    """A fresh, unexecuted code cell."""
    return {"cell_type": "code", "execution_count": None, "metadata": metadata or {}, "outputs": [], "source": source}


def notebook(cells: list, **metadata) -> dict:
    """A format 4.5 notebook around ``cells``, with the plain python3 kernelspec and ``metadata``."""
    return {"cells": cells, "metadata": {**metadata, "kernelspec": KERNELSPEC}, "nbformat": 4, "nbformat_minor": 5}
