"""Static validation of policy source: the first gate before any code runs.

`validate_source` parses the source with `ast` (it never executes it) and
returns one `ValidationIssue` per problem, each with the line it is on, so the
messages can go straight back to the LLM or to the person editing the code.
An empty list means the source may be handed to the sandbox.

This is a filter for honest mistakes and obvious escape attempts, not the
security boundary: the sandbox host (`policy_host.py`, `host_main.py`) enforces
the same rules again at run time, inside an isolated process.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from csro_tui.sandbox.contract import ALLOWED_IMPORTS, MAX_SOURCE_BYTES, POLICY_CLASS_NAME

# The file name policy code is compiled under, here and in the sandbox, so
# tracebacks and validation messages name the same file.
POLICY_FILENAME = "policy.py"

# Builtins a policy may not use at all: code execution, file and console
# access, namespace and frame introspection.
FORBIDDEN_BUILTINS: frozenset[str] = frozenset(
    {
        "exec",
        "eval",
        "compile",
        "open",
        "__import__",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "input",
        "memoryview",
        "exit",
        "quit",
        "help",
    }
)

# Attribute builtins: allowed only when called directly with a literal,
# non-dunder attribute name.
ATTRIBUTE_BUILTINS: frozenset[str] = frozenset({"getattr", "setattr", "delattr"})

# Dunder attributes harmless enough to read (`super().__init__(...)`,
# `type(self).__name__`).  Every other `x.__dunder__` is rejected.
ALLOWED_DUNDER_ATTRIBUTES: frozenset[str] = frozenset({"__init__", "__name__"})

# Dunder names a module or class body may read or bind.
ALLOWED_DUNDER_NAMES: frozenset[str] = frozenset({"__name__", "__slots__", "__all__"})

# Plain attribute names that reach frames, code objects or modules a policy
# may not import (`random._os`, `typing.sys`, `gen.gi_frame.f_back`, ...).
FORBIDDEN_ATTRIBUTES: frozenset[str] = frozenset(
    {
        # frames, generators, coroutines, tracebacks, code objects
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "ag_await",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "f_trace",
        "tb_frame",
        "tb_next",
        "co_code",
        "co_consts",
        "co_names",
        # modules reachable as attributes of allowed modules
        "sys",
        "_sys",
        "os",
        "_os",
        "builtins",
        "_builtins",
        "modules",
        "importlib",
        "subprocess",
        "socket",
        "ctypes",
        "signal",
        "_signal",
        "posix",
        "gc",
        "inspect",
    }
)

# `from __future__ import annotations` is a compiler directive, not a
# dependency, so it is accepted although __future__ is not in ALLOWED_IMPORTS.
FUTURE_MODULE = "__future__"


@dataclass(frozen=True)
class ValidationIssue:
    """One problem in policy source; `line` and `col` are 1-based."""

    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _allowed_list() -> str:
    return ", ".join(sorted(ALLOWED_IMPORTS))


def decode_source(source: str | bytes) -> tuple[str | None, list[ValidationIssue]]:
    """Check size and encoding; return the text (or None) and any issues."""
    if isinstance(source, bytes):
        raw = source
    elif isinstance(source, str):
        try:
            raw = source.encode("utf-8")
        except UnicodeEncodeError as err:
            line = source.count("\n", 0, err.start) + 1
            col = err.start - (source.rfind("\n", 0, err.start) + 1) + 1
            return None, [ValidationIssue(line, col, "source contains a character that is not valid Unicode")]
    else:
        return None, [ValidationIssue(1, 1, f"source must be text, not {type(source).__name__}")]
    if len(raw) > MAX_SOURCE_BYTES:
        return None, [
            ValidationIssue(1, 1, f"source is {len(raw):,} bytes; the limit is {MAX_SOURCE_BYTES:,} bytes")
        ]
    if isinstance(source, str):
        text = source
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            line = raw.count(b"\n", 0, err.start) + 1
            col = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
            return None, [ValidationIssue(line, col, "source is not valid UTF-8")]
        if text.startswith("\ufeff"):
            text = text[1:]
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        col = nul - (text.rfind("\n", 0, nul) + 1) + 1
        return None, [ValidationIssue(line, col, "source contains a NUL character")]
    return text, []


def parse_source(text: str) -> tuple[ast.Module | None, list[ValidationIssue]]:
    """Parse text into an AST, turning syntax errors into issues."""
    try:
        tree = ast.parse(text, filename=POLICY_FILENAME)
        # Compiling (never running) the tree catches what the parser lets
        # through: `return` outside a function, late `__future__` imports, ...
        compile(tree, POLICY_FILENAME, "exec", dont_inherit=True)
        return tree, []
    except SyntaxError as err:
        line = err.lineno or 1
        col = err.offset or 1
        return None, [ValidationIssue(line, col, f"syntax error: {err.msg}")]
    except (RecursionError, MemoryError):
        return None, [ValidationIssue(1, 1, "source is nested too deeply to parse")]
    except ValueError as err:  # e.g. characters the tokenizer refuses
        return None, [ValidationIssue(1, 1, f"cannot parse source: {err}")]


def imported_modules(source: str) -> set[str]:
    """Top-level names of the modules `source` imports (empty if unparsable).

    The sandbox loads these before the policy runs; validation decides
    whether they are allowed.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def validate_source(source: str | bytes) -> list[ValidationIssue]:
    """Return every problem found in policy source; an empty list means valid.

    Checks, in order: size, UTF-8, NUL characters, syntax (stops here on
    failure), the `Policy` class and its method signatures, imports,
    forbidden builtins, dunder and introspection attribute access.
    """
    text, issues = decode_source(source)
    if text is None:
        return issues
    tree, issues = parse_source(text)
    if tree is None:
        return issues
    checker = _Checker(_bound_names(tree), _module_names(tree))
    try:
        checker.visit(tree)
    except RecursionError:
        return [ValidationIssue(1, 1, "source is nested too deeply to check")]
    issues = checker.issues + _check_policy_class(tree)
    return sorted(set(issues), key=lambda issue: (issue.line, issue.col, issue.message))


def _module_names(tree: ast.Module) -> set[str]:
    """Names `import x` / `import x as y` bind to a module."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
    return names


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name the module binds anywhere except as a parameter.

    A forbidden builtin is only reported when the policy reads it without
    binding it, so a local variable called `input` is fine.  Parameters are
    scoped by `_Checker`, so `def f(exec=exec)` is still caught.
    """
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound


class _Checker(ast.NodeVisitor):
    """Collects import, builtin, dunder and attribute issues in one walk."""

    def __init__(self, bound: set[str], modules: set[str] = frozenset()) -> None:
        self.bound = bound
        self.modules = modules
        self.issues: list[ValidationIssue] = []
        # Name nodes already judged as the callee of getattr(...) etc.
        self._checked_calls: set[int] = set()
        # Parameter names of the functions being visited, innermost last.
        self._params: list[set[str]] = []

    def _is_bound(self, name: str) -> bool:
        return name in self.bound or any(name in params for params in self._params)

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        # Decorators, defaults and annotations run in the enclosing scope.
        for decorator in getattr(node, "decorator_list", []):
            self.visit(decorator)
        args = node.args
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None:
                self.visit(default)
        all_args = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        for arg in all_args:
            if arg is not None and arg.annotation is not None:
                self.visit(arg.annotation)
        if getattr(node, "returns", None) is not None:
            self.visit(node.returns)
        self._params.append({arg.arg for arg in all_args if arg is not None})
        body = node.body if isinstance(node.body, list) else [node.body]
        for statement in body:
            self.visit(statement)
        self._params.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function
    visit_Lambda = _visit_function

    def _add(self, node: ast.AST, message: str) -> None:
        line = getattr(node, "lineno", 1) or 1
        col = (getattr(node, "col_offset", 0) or 0) + 1
        self.issues.append(ValidationIssue(line, col, message))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            top = alias.name.split(".")[0]
            if top not in ALLOWED_IMPORTS:
                self._add(node, f"import of '{alias.name}' is not allowed; allowed modules: {_allowed_list()}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._add(node, "relative imports are not allowed")
            return
        module = node.module or ""
        if module == FUTURE_MODULE:
            return
        top = module.split(".")[0]
        if top not in ALLOWED_IMPORTS:
            self._add(node, f"import from '{module}' is not allowed; allowed modules: {_allowed_list()}")
        for alias in node.names:
            if _is_dunder(alias.name) or alias.name in FORBIDDEN_ATTRIBUTES:
                self._add(node, f"importing '{alias.name}' from '{module}' is not allowed")

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if id(node) in self._checked_calls:
            return
        if _is_dunder(name) and name not in ALLOWED_DUNDER_NAMES:
            self._add(node, f"the name '{name}' is not allowed (no dunder names)")
        elif isinstance(node.ctx, ast.Load) and not self._is_bound(name):
            if name in FORBIDDEN_BUILTINS:
                self._add(node, f"'{name}' is not allowed in policies")
            elif name in ATTRIBUTE_BUILTINS:
                self._add(node, f"'{name}' may only be called directly, with a literal attribute name")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if _is_dunder(attr) and attr not in ALLOWED_DUNDER_ATTRIBUTES:
            self._add(node, f"access to the dunder attribute '.{attr}' is not allowed")
        elif attr in FORBIDDEN_ATTRIBUTES:
            self._add(node, f"access to the attribute '.{attr}' is not allowed")
        elif (
            isinstance(node.ctx, (ast.Store, ast.Del)) and isinstance(node.value, ast.Name)
            and node.value.id in self.modules
        ):
            # Library modules are shared by all of a policy's episodes in
            # one host: state stored on them would cross episodes.
            self._add(node, f"assigning to the attribute '.{attr}' of a module is not allowed")
        elif attr.startswith("_") and isinstance(node.value, ast.Name) and node.value.id in self.modules:
            # A module's private helpers are where exec gadgets live
            # (dataclasses._create_fn, typing's evaluation internals).
            self._add(node, f"access to the private attribute '.{attr}' of a module is not allowed")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ATTRIBUTE_BUILTINS and not self._is_bound(func.id):
            self._checked_calls.add(id(func))
            self._check_attribute_call(node, func.id)
        elif (
            isinstance(func, ast.Attribute)
            and func.attr in ("format", "format_map")
            and isinstance(func.value, ast.Constant)
            and isinstance(func.value.value, str)
            and "__" in func.value.value
        ):
            # "{0.__class__}".format(x) reads dunder attributes by name.
            self._add(node, "format strings may not mention dunder names")
        self.generic_visit(node)

    def _check_attribute_call(self, node: ast.Call, builtin: str) -> None:
        if len(node.args) < 2:
            # Calls with too few arguments fail on their own; nothing unsafe.
            return
        name_arg = node.args[1]
        if not (isinstance(name_arg, ast.Constant) and isinstance(name_arg.value, str)):
            self._add(node, f"{builtin}() needs a literal attribute name, not a computed one")
        elif _is_dunder(name_arg.value) and name_arg.value not in ALLOWED_DUNDER_ATTRIBUTES:
            self._add(node, f"{builtin}() of the dunder attribute '{name_arg.value}' is not allowed")
        elif name_arg.value in FORBIDDEN_ATTRIBUTES:
            self._add(node, f"{builtin}() of the attribute '{name_arg.value}' is not allowed")

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        # `case C(__class__=x)` reads attributes by keyword name.
        for attr in node.kwd_attrs:
            if (_is_dunder(attr) and attr not in ALLOWED_DUNDER_ATTRIBUTES) or attr in FORBIDDEN_ATTRIBUTES:
                self._add(node, f"matching on the attribute '{attr}' is not allowed")
        self.generic_visit(node)


# (method name, number of arguments the sandbox passes after self, their names)
_REQUIRED_METHODS = (("__init__", 2, "player, game"), ("act", 1, "obs"))


def _check_policy_class(tree: ast.Module) -> list[ValidationIssue]:
    """Check that `class Policy` exists at top level with callable methods."""
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    policy = classes.get(POLICY_CLASS_NAME)
    if policy is None:
        return [ValidationIssue(1, 1, f"no top-level `class {POLICY_CLASS_NAME}` defined")]
    issues: list[ValidationIssue] = []
    for method_name, arg_count, arg_names in _REQUIRED_METHODS:
        method, owner, unknown_base = _find_method(policy, method_name, classes)
        where = f"{POLICY_CLASS_NAME}.{method_name}"
        if method is None:
            if unknown_base is None:
                issues.append(
                    ValidationIssue(
                        policy.lineno,
                        policy.col_offset + 1,
                        f"`class {POLICY_CLASS_NAME}` must define `{method_name}(self, {arg_names})`",
                    )
                )
            continue
        if isinstance(method, ast.AsyncFunctionDef):
            issues.append(ValidationIssue(method.lineno, method.col_offset + 1, f"{where} must not be async"))
            continue
        problem = _signature_problem(method, arg_count)
        if problem:
            issues.append(
                ValidationIssue(
                    method.lineno,
                    method.col_offset + 1,
                    f"{where} must accept ({arg_names}) after self: {problem}",
                )
            )
    return issues


def _find_method(
    cls: ast.ClassDef, name: str, classes: dict[str, ast.ClassDef], seen: set[str] | None = None
) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | None, ast.ClassDef, ast.expr | None]:
    """Find `name` in cls or its module-level base classes.

    Returns (method, owning class, first base that is not a module-level
    class).  An unknown base might define the method, so a missing method is
    only reported when every base is known.
    """
    seen = seen or set()
    seen.add(cls.name)
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node, cls, None
    unknown: ast.expr | None = None
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
            found, owner, base_unknown = _find_method(classes[base.id], name, classes, seen)
            if found is not None:
                return found, owner, None
            unknown = unknown or base_unknown
        elif not (isinstance(base, ast.Name) and base.id == "object"):
            unknown = unknown or base
    return None, cls, unknown


def _signature_problem(method: ast.FunctionDef, arg_count: int) -> str:
    """Why `method` cannot be called as instance.method(*arg_count args), or ''."""
    decorators = {d.id for d in method.decorator_list if isinstance(d, ast.Name)}
    if "staticmethod" in decorators:
        implicit = 0
    elif len(method.decorator_list) > 0 and not decorators <= {"classmethod"}:
        return ""  # an unknown decorator may change the signature; judged at run time
    else:
        implicit = 1
    args = method.args
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    wanted = implicit + arg_count
    if required > wanted:
        return f"it requires {required - implicit} arguments"
    if positional < wanted and args.vararg is None:
        return f"it takes only {max(positional - implicit, 0)} arguments"
    missing_kwonly = [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]
    if missing_kwonly:
        return f"keyword-only argument '{missing_kwonly[0]}' has no default"
    return ""
