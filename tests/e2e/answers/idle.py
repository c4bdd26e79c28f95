"""Three answers to every exercise that do not do its task, made from its solution's answer cell.

``tests/e2e/test_answers.py`` grades them beside the answers written in ``answers_NN_name.py``: each must fail
every check of its exercise. A check of a property — no copy, no sync, memory given back, at most N tries,
``None`` where no answer exists — that one of them passes hands out a point for nothing.
"""

from __future__ import annotations

import ast
import copy


def answers(source: str) -> list[tuple[str, str]]:
    """Answers made from a solution's answer cell that do not do its task: the cell left empty; its functions
    and methods kept with bodies that raise; and with bodies that return ``None`` (its other values ``None``).
    Imports and a cell magic (``%%writefile``) are kept, so only the work is missing."""
    lines = source.splitlines()
    magic = lines[0] if lines and lines[0].startswith("%%") else None
    tree = ast.parse("\n".join(lines[1:] if magic else lines))

    def hollowed(body_of) -> str:
        kept: list[ast.stmt] = []
        for statement in tree.body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                kept.append(statement)
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                kept.append(_with_body(statement, body_of))
            elif isinstance(statement, ast.ClassDef):
                statement = copy.deepcopy(statement)
                statement.body = [
                    _with_body(part, body_of) if isinstance(part, (ast.FunctionDef, ast.AsyncFunctionDef)) else part
                    for part in statement.body
                ]
                kept.append(statement)
            else:  # a value the task asks for: raise, or None in its place
                kept.extend(body_of(statement))
        return "\n".join(([magic] if magic else []) + [ast.unparse(ast.fix_missing_locations(ast.Module(kept, [])))])

    def raising(statement=None) -> list[ast.stmt]:
        return ast.parse("raise NotImplementedError()").body

    def none(statement=None) -> list[ast.stmt]:
        if statement is None:
            return ast.parse("return None").body
        names = [
            target
            for node in ast.walk(statement)
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        ]
        return [ast.Assign([copy.deepcopy(name)], ast.Constant(None), lineno=0) for name in names]

    return [
        ("empty: the answer cell left as it was, with none of the names the task asks for", ""),
        ("raises: every function and method the task asks for raises", hollowed(raising)),
        ("returns None: every function and method the task asks for does nothing", hollowed(none)),
    ]


def _with_body(function: ast.FunctionDef, body_of) -> ast.FunctionDef:
    function = copy.deepcopy(function)
    function.body = body_of()
    return function
