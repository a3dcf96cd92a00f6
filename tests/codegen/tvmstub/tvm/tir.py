"""Stand-in tvm.tir: conditions and constants."""
from . import All, Const, IfThenElse, Bin, _wrap


def if_then_else(c, t, f):
    return IfThenElse(c, t, f)


def const(v, dtype='int32'):
    return Const(float(v) if dtype.startswith('float') else int(v))


def all(*args):
    return All(args)


def _int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def floordiv(a, b):
    # TVM folds integer constants (sizes of concrete shapes); expressions stay expressions.
    if _int(a) and _int(b):
        return a // b
    return Bin('floordiv', _wrap(a), _wrap(b))


def floormod(a, b):
    if _int(a) and _int(b):
        return a % b
    return Bin('floormod', _wrap(a), _wrap(b))


def Cast(dtype, v):
    assert dtype == 'float32', dtype
    return _wrap(float(v)) if _int(v) else _wrap(v)
