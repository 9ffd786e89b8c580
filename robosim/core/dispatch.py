"""`below_autograd`: run a function's tensor math without torch's autograd bookkeeping.

An env step is a few hundred tensor operations on tiny tensors, none of which is ever
differentiated (the env detaches actions and returns fresh tensors). Torch routes every
operation through its autograd and view/version-tracking dispatch layers first; skipping
them (torch's own `AutoDispatchBelowADInplaceOrView` guard, the one its functorch layer
uses) costs nothing in results and saves about a tenth of the one-env step on the
project machine (docs/performance.md, step 8). Tensors made inside are ordinary tensors
(not inference tensors): callers may modify them in place or feed them to a network.

Contract for code that runs inside (a task's hooks, called from BaseEnv.reset/step):
no autograd graph is recorded there, so a result never carries `grad_fn` and in-place
writes do not bump version counters. Where the guard is missing from torch, the
decorator is the identity.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch

F = TypeVar("F", bound=Callable)
_GUARD = getattr(torch._C, "_AutoDispatchBelowADInplaceOrView", None)


def below_autograd(fn: F) -> F:
    """Decorator: call `fn` with torch's autograd and ADInplaceOrView dispatch keys
    skipped (thread-local, undone on return or exception)."""
    if _GUARD is None:
        return fn

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _GUARD():
            return fn(*args, **kwargs)
    return wrapper  # type: ignore[return-value]
