"""Writes the pins of what the autograder's image already has (torch, numpy) to the constraints file
named first: setup.sh installs gpulab's requirements without replacing them."""

import importlib.metadata
import sys

pins = []
for name in ("torch", "numpy"):
    try:
        pins.append(f"{name}=={importlib.metadata.version(name)}")
    except importlib.metadata.PackageNotFoundError:
        pass
with open(sys.argv[1], "w") as out:
    out.write("\n".join(pins) + "\n")
