"""gpulab.checks.replace.everywhere: the one way checks and their recorders replace a function for a block."""

import sys
import types

import pytest

from gpulab.checks.replace import everywhere


def test_a_missing_attribute_is_refused_unless_created_and_then_removed_after():
    owner = types.ModuleType("owner")
    with pytest.raises(AttributeError):
        with everywhere(owner, "is_available", lambda: True):
            pass
    assert not hasattr(owner, "is_available")
    with everywhere(owner, "is_available", lambda: True, create=True) as original:
        assert original is None and owner.is_available() is True
    assert not hasattr(owner, "is_available")


def test_create_leaves_an_existing_attribute_to_the_ordinary_swap():
    def real():
        return "real"

    owner, other = types.ModuleType("owner"), types.ModuleType("other")
    owner.ask = other.ask = real
    sys.modules["gpulab_test_other"] = other
    try:
        with everywhere(owner, "ask", lambda: "replaced", create=True) as original:
            assert original is real and owner.ask() == other.ask() == "replaced"
    finally:
        del sys.modules["gpulab_test_other"]
    assert owner.ask is real and other.ask is real


def test_main_reaches_a_notebooks_names_and_an_inherited_attribute_is_inherited_again(monkeypatch):
    class Base:
        def ask(self):
            return "base"

    class Derived(Base):
        pass

    notebook = types.ModuleType("__main__")
    notebook.asked = Base.ask
    monkeypatch.setitem(sys.modules, "__main__", notebook)
    with everywhere(Derived, "ask", lambda self: "replaced", main=True):
        assert Derived().ask() == "replaced" and notebook.asked(None) == "replaced"
    assert "ask" not in vars(Derived) and Derived().ask() == "base" and notebook.asked is Base.ask
