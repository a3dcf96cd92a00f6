"""Stand-in tvm.te: placeholders, reduction axes, compute and sum."""
import inspect

from . import Reduce, Tensor, Var
from .tir import all, floordiv, floormod, if_then_else  # noqa: F401


def placeholder(shape, dtype='float32', name='placeholder'):
    assert dtype == 'float32', dtype
    return Tensor(shape, name)


def reduce_axis(dom, name='rv'):
    lo, hi = dom
    assert lo == 0, 'reduce axes start at 0 here'
    return Var(name, int(hi))


def compute(shape, fcompute, name='compute', tag=''):
    params = list(inspect.signature(fcompute).parameters)
    if len(params) != len(shape):
        raise TypeError('%s: %d axes, the body takes %d' % (name, len(shape), len(params)))
    axes = [Var(p, int(n)) for p, n in zip(params, shape)]
    return Tensor(shape, name, body=fcompute(*axes), axes=axes)


def sum(expr, axis, where=None):
    assert where is None
    axis = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not axis:
        raise ValueError('te.sum over no axis')
    return Reduce(expr, axis)
