"""Safe handling of the expression strings in case records.

A case file may be hostile, so an expression string is never handed to ``eval``
or ``sympy.sympify``. It is parsed with :func:`ast.parse` (``mode="eval"``), every
node is checked against a small whitelist, and the sympy expression is built from
the checked tree by this module.

Allowed:

- numbers (finite ``int`` / ``float`` literals);
- the coordinates and time given in ``allowed_symbols`` (default ``x, y, z, t``),
  the constants ``pi`` and ``E``, and the names of caller-supplied ``parameters``;
- ``+ - * / **`` and unary ``+ -``;
- calls of the functions in :data:`FUNCTIONS` (positional arguments only).

Everything else (attribute access, subscripts, lambdas, comparisons, keyword
arguments, strings, ``^`` ...) is rejected with :class:`ExpressionError`.
"""

from __future__ import annotations

import ast
import keyword
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import sympy
from numpy.typing import NDArray

MAX_LENGTH = 10_000
"""Longest accepted expression string (characters)."""
MAX_DEPTH = 100
"""Deepest accepted syntax tree."""
MAX_EXPONENT = 1_000
"""Largest magnitude of a numeric exponent (guards against ``10**10**10``)."""
MAX_EXACT_DIGITS = 10_000
"""Largest number of digits an exact numeric power may produce."""

COORDINATES = ("x", "y", "z")
TIME = "t"

SYMBOLS: dict[str, sympy.Symbol] = {name: sympy.Symbol(name) for name in ("x", "y", "z", "t")}
"""The sympy symbols used for coordinates and time (plain symbols, no assumptions)."""

CONSTANTS: dict[str, sympy.Expr] = {"pi": sympy.pi, "E": sympy.E}

# name -> (sympy callable, min arity, max arity)
FUNCTIONS: dict[str, tuple[Callable[..., sympy.Expr], int, int | None]] = {
    "sin": (sympy.sin, 1, 1),
    "cos": (sympy.cos, 1, 1),
    "tan": (sympy.tan, 1, 1),
    "asin": (sympy.asin, 1, 1),
    "acos": (sympy.acos, 1, 1),
    "atan": (sympy.atan, 1, 1),
    "atan2": (sympy.atan2, 2, 2),
    "sinh": (sympy.sinh, 1, 1),
    "cosh": (sympy.cosh, 1, 1),
    "tanh": (sympy.tanh, 1, 1),
    "exp": (sympy.exp, 1, 1),
    "log": (sympy.log, 1, 1),
    "sqrt": (sympy.sqrt, 1, 1),
    "abs": (sympy.Abs, 1, 1),
    "Abs": (sympy.Abs, 1, 1),
    "sign": (sympy.sign, 1, 1),
    "Heaviside": (sympy.Heaviside, 1, 2),
    "min": (sympy.Min, 1, None),
    "Min": (sympy.Min, 1, None),
    "max": (sympy.Max, 1, None),
    "Max": (sympy.Max, 1, None),
}
"""Whitelisted functions: name in the expression -> (sympy function, min, max arity)."""

RESERVED_NAMES = frozenset(SYMBOLS) | frozenset(CONSTANTS) | frozenset(FUNCTIONS)
"""Names a case parameter may not take if it is to be referenced in expressions."""

# muparser (deal.II FunctionParser) spelling of the whitelisted functions.
_MUPARSER_FUNCTIONS = {
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "atan2": "atan2",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "exp": "exp",
    "log": "ln",  # muparser: ln is the natural log in every version
    "sqrt": "sqrt",
    "abs": "abs",
    "Abs": "abs",
    "sign": "sign",
    "min": "min",
    "Min": "min",
    "max": "max",
    "Max": "max",
}
_MUPARSER_CONSTANTS = {"pi": repr(math.pi), "E": repr(math.e)}


class ExpressionError(ValueError):
    """An expression string is not in the accepted subset (message says why)."""


def is_parameter_name(name: str) -> bool:
    """True if ``name`` may be referenced as a parameter inside expressions."""
    return name.isidentifier() and not keyword.iskeyword(name) and name not in RESERVED_NAMES


def _syntax_tree(text: str) -> ast.expr:
    if not isinstance(text, str):
        raise ExpressionError(f"expected an expression string, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression is too long ({len(text)} > {MAX_LENGTH} characters)")
    if not text.strip():
        raise ExpressionError("expression is empty")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"not a valid expression: {exc.msg}") from None
    except (ValueError, MemoryError, RecursionError) as exc:
        raise ExpressionError(f"not a valid expression: {type(exc).__name__}") from None
    _check_depth(tree.body)
    return tree.body


def _check_depth(root: ast.AST) -> None:
    stack: list[tuple[ast.AST, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ExpressionError(f"expression is nested too deeply (> {MAX_DEPTH} levels)")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _describe(node: ast.AST) -> str:
    names = {
        ast.Attribute: "attribute access",
        ast.Subscript: "subscripts",
        ast.Lambda: "lambda",
        ast.Compare: "comparisons",
        ast.BoolOp: "boolean operators",
        ast.IfExp: "conditional expressions",
        ast.Starred: "starred arguments",
        ast.NamedExpr: "assignment expressions",
        ast.JoinedStr: "strings",
        ast.List: "lists",
        ast.Tuple: "tuples",
        ast.Dict: "dicts",
        ast.Set: "sets",
        ast.ListComp: "comprehensions",
        ast.GeneratorExp: "comprehensions",
        ast.DictComp: "comprehensions",
        ast.SetComp: "comprehensions",
        ast.Await: "await",
    }
    return names.get(type(node), type(node).__name__)


class _Builder:
    """Build a sympy expression from a whitelisted syntax tree."""

    def __init__(self, names: Mapping[str, sympy.Expr]) -> None:
        self.names = names

    def build(self, node: ast.AST) -> sympy.Expr:
        match node:
            case ast.Constant(value=bool()) | ast.Constant(value=None):
                raise ExpressionError(f"constant {node.value!r} is not allowed")
            case ast.Constant(value=int() as value):
                return sympy.Integer(value)
            case ast.Constant(value=float() as value):
                if not math.isfinite(value):
                    raise ExpressionError("numbers must be finite")
                return sympy.Float(value)
            case ast.Constant():
                raise ExpressionError(f"{type(node.value).__name__} constants are not allowed")
            case ast.Name(id=name):
                try:
                    return self.names[name]
                except KeyError:
                    if name in FUNCTIONS:
                        raise ExpressionError(f"function {name!r} must be called") from None
                    allowed = ", ".join(sorted(self.names))
                    raise ExpressionError(f"unknown name {name!r} (allowed: {allowed})") from None
            case ast.UnaryOp(op=ast.UAdd(), operand=operand):
                return self.build(operand)
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                return -self.build(operand)
            case ast.BinOp(left=left, op=op, right=right):
                return self._binop(op, self.build(left), self.build(right))
            case ast.Call():
                return self._call(node)
        raise ExpressionError(f"{_describe(node)} not allowed in expressions")

    def _binop(self, op: ast.operator, a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
        match op:
            case ast.Add():
                return a + b
            case ast.Sub():
                return a - b
            case ast.Mult():
                return a * b
            case ast.Div():
                return a / b
            case ast.Pow():
                _check_power(a, b)
                return a**b
            case ast.BitXor():
                raise ExpressionError("'^' is not a power here: use '**'")
        raise ExpressionError(f"operator {type(op).__name__} not allowed in expressions")

    def _call(self, node: ast.Call) -> sympy.Expr:
        if not isinstance(node.func, ast.Name):
            raise ExpressionError(
                f"only whitelisted functions may be called (got a call of {_describe(node.func)})"
            )
        name = node.func.id
        if name not in FUNCTIONS:
            allowed = ", ".join(sorted(FUNCTIONS))
            raise ExpressionError(f"unknown function {name!r} (allowed: {allowed})")
        if node.keywords:
            raise ExpressionError(f"{name}(): keyword arguments are not allowed")
        func, lo, hi = FUNCTIONS[name]
        n = len(node.args)
        if n < lo or (hi is not None and n > hi):
            want = str(lo) if lo == hi else f"{lo}..{hi if hi is not None else 'n'}"
            raise ExpressionError(f"{name}() takes {want} argument(s), got {n}")
        return func(*(self.build(arg) for arg in node.args))


def _check_power(base: sympy.Expr, exponent: sympy.Expr) -> None:
    if not exponent.is_Number:
        return
    if abs(float(exponent)) > MAX_EXPONENT:
        raise ExpressionError(f"numeric exponent too large (|exponent| > {MAX_EXPONENT})")
    if base.is_Rational and exponent.is_Integer:
        p, q = sympy.fraction(base)
        digits = (len(str(abs(int(p)))) + len(str(abs(int(q))))) * abs(int(exponent))
        if digits > MAX_EXACT_DIGITS:
            raise ExpressionError("exact numeric power too large")


def _names(
    allowed_symbols: Iterable[str], parameters: Mapping[str, Any] | Iterable[str] | None
) -> dict[str, sympy.Expr]:
    names: dict[str, sympy.Expr] = dict(CONSTANTS)
    for name in allowed_symbols:
        names[name] = SYMBOLS.get(name) or sympy.Symbol(name)
    if parameters is None:
        return names
    if isinstance(parameters, Mapping):
        items: Iterable[tuple[str, Any]] = parameters.items()
    else:
        items = ((name, None) for name in parameters)
    for name, value in items:
        if not is_parameter_name(name):
            continue
        if value is None:
            names[name] = sympy.Symbol(name)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            names[name] = sympy.Integer(value) if isinstance(value, int) else sympy.Float(value)
    return names


def parse_expression(
    text: str,
    *,
    allowed_symbols: Sequence[str] = ("x", "y", "z", "t"),
    parameters: Mapping[str, Any] | Iterable[str] | None = None,
) -> sympy.Expr:
    """Parse ``text`` into a sympy expression, accepting only the safe subset.

    ``parameters``: names of case parameters that may be referenced. A mapping
    substitutes numeric values (non-numeric entries are ignored); a plain iterable
    of names keeps them as symbols. Names in :data:`RESERVED_NAMES` are never
    parameters.

    Raises :class:`ExpressionError`.
    """
    tree = _syntax_tree(text)
    try:
        expr = _Builder(_names(allowed_symbols, parameters)).build(tree)
    except ExpressionError:
        raise
    except RecursionError:
        raise ExpressionError("expression is nested too deeply") from None
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise ExpressionError(f"invalid expression: {exc}") from None
    if expr.has(sympy.zoo, sympy.nan) or expr.has(sympy.oo, -sympy.oo):
        raise ExpressionError("expression is undefined or infinite (e.g. division by zero)")
    return sympy.sympify(expr)


def _coordinate_names(dim: int) -> tuple[str, ...]:
    if dim not in (1, 2, 3):
        raise ValueError(f"dim must be 1, 2 or 3, got {dim}")
    return COORDINATES[:dim]


def compile_expression(
    expr_or_text: str | sympy.Expr | Sequence[str | sympy.Expr],
    dim: int,
    *,
    parameters: Mapping[str, Any] | None = None,
) -> Callable[..., NDArray[np.float64]]:
    """Compile an expression to ``f(x, y[, z], t=0.0) -> ndarray`` (numpy).

    The result always has the broadcast shape of the inputs (a constant becomes a
    filled array). A sequence of expressions (a vector) compiles to a function
    returning an array of shape ``(ncomponents, *shape)``. Text is parsed with
    :func:`parse_expression` over the first ``dim`` coordinates and ``t``;
    ``parameters`` (name -> number) are substituted.
    """
    coords = _coordinate_names(dim)
    if isinstance(expr_or_text, Sequence) and not isinstance(expr_or_text, str):
        parts = [compile_expression(e, dim, parameters=parameters) for e in expr_or_text]

        def vector(*args: Any, t: Any = 0.0) -> NDArray[np.float64]:
            return np.stack([part(*args, t=t) for part in parts])

        return vector

    if isinstance(expr_or_text, str):
        expr = parse_expression(
            expr_or_text, allowed_symbols=(*coords, TIME), parameters=parameters or {}
        )
    else:
        expr = sympy.sympify(expr_or_text)
        if parameters:
            expr = expr.subs(
                {sympy.Symbol(k): v for k, v in parameters.items() if is_parameter_name(k)}
            )
    symbols = [SYMBOLS[name] for name in (*coords, TIME)]
    extra = expr.free_symbols - set(symbols)
    if extra:
        names = ", ".join(sorted(str(s) for s in extra))
        raise ExpressionError(f"expression uses symbols not available in {dim}-D: {names}")
    func = sympy.lambdify(symbols, expr, modules="numpy")

    def evaluate(*args: Any, t: Any = 0.0) -> NDArray[np.float64]:
        if len(args) != dim:
            raise TypeError(f"expected {dim} coordinate arrays, got {len(args)}")
        arrays = [np.asarray(a, dtype=np.float64) for a in (*args, t)]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        with np.errstate(all="ignore"):
            value = np.asarray(func(*arrays), dtype=np.float64)
        return np.array(np.broadcast_to(value, shape), dtype=np.float64)

    return evaluate


def to_muparser(
    text: str,
    *,
    allowed_symbols: Sequence[str] = ("x", "y", "z", "t"),
    parameters: Mapping[str, Any] | Iterable[str] | None = None,
) -> str:
    """Translate an expression to muparser syntax (deal.II ``FunctionParser``).

    The text is checked exactly like :func:`parse_expression`, then printed fully
    parenthesised with ``^`` for powers, ``ln`` for the natural log, numeric
    ``pi``/``E``, and ``Heaviside`` as a ternary. Numeric ``parameters`` are
    substituted; other referenced names are kept.
    """
    parse_expression(text, allowed_symbols=allowed_symbols, parameters=parameters)
    names = _names(allowed_symbols, parameters)
    return _MuparserPrinter(names).print(_syntax_tree(text))


class _MuparserPrinter:
    def __init__(self, names: Mapping[str, sympy.Expr]) -> None:
        self.names = names

    def print(self, node: ast.AST) -> str:
        match node:
            case ast.Constant(value=value):
                return repr(value)
            case ast.Name(id=name):
                if name in _MUPARSER_CONSTANTS:
                    return _MUPARSER_CONSTANTS[name]
                value = self.names.get(name)
                if value is not None and value.is_Number:
                    return f"({float(value)!r})"
                return name
            case ast.UnaryOp(op=ast.UAdd(), operand=operand):
                return f"({self._wrap(operand)})"
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                return f"(-{self._wrap(operand)})"
            case ast.BinOp(left=left, op=op, right=right):
                symbol = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "^"}
                return f"{self._wrap(left)}{symbol[type(op)]}{self._wrap(right)}"
            case ast.Call(func=ast.Name(id="Heaviside"), args=args):
                a = self.print(args[0])
                h0 = self.print(args[1]) if len(args) > 1 else "0.5"
                return f"(({a}) > 0 ? 1 : (({a}) < 0 ? 0 : ({h0})))"
            case ast.Call(func=ast.Name(id=name), args=args):
                inner = ", ".join(self.print(a) for a in args)
                return f"{_MUPARSER_FUNCTIONS[name]}({inner})"
        raise ExpressionError(f"{_describe(node)} not allowed in expressions")  # pragma: no cover

    def _wrap(self, node: ast.AST) -> str:
        text = self.print(node)
        atomic = isinstance(node, ast.Name | ast.Call | ast.UnaryOp) or (
            isinstance(node, ast.Constant) and not text.startswith("-")
        )
        return text if atomic else f"({text})"
