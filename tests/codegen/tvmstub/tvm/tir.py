"""Stand-in tvm.tir: conditions and constants."""
from . import All, Const, IfThenElse, Bin, _wrap


def if_then_else(c, t, f):
    return IfThenElse(c, t, f)


def const(v, dtype='int32'):
    return Const(float(v) if dtype.startswith('float') else int(v))


def all(*args):
    return All(args)


def floordiv(a, b):
    return Bin('floordiv', _wrap(a), _wrap(b))


def floormod(a, b):
    return Bin('floormod', _wrap(a), _wrap(b))
