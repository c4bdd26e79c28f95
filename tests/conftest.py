import pathlib

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU; this machine has none")


@pytest.fixture
def root() -> pathlib.Path:
    return ROOT
