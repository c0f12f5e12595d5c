"""``@frozen_settings``: a frozen, slotted, keyword-only dataclass without generated code.

``@dataclass`` compiles ``__init__``, ``__repr__``, ``__eq__`` and ``__hash__`` with
``exec`` for each class; for :class:`~kafkaline.config.ProducerConfig`'s fifty-odd fields that
was a twentieth of ``import kafkaline`` (docs/performance.md, "Start-up"). Here the class is
still a dataclass (``dataclasses.fields()``, ``replace()``, ``FrozenInstanceError``,
pickling), made with those four methods turned off, and gets generic ones that loop over its
fields instead. Type checkers read it as ``@dataclass(frozen=True, slots=True, kw_only=True)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

T = TypeVar("T")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # only type checkers read it

    def dataclass_transform(**_: object) -> Callable[[T], T]:
        return lambda decorated: decorated


__all__ = ["frozen_settings"]


@overload
def frozen_settings(cls: type[T], /) -> type[T]: ...


@overload
def frozen_settings(*, kw_only: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(
    kw_only_default=True, frozen_default=True, field_specifiers=(dataclasses.field,)
)
def frozen_settings(
    cls: type[T] | None = None, /, *, kw_only: bool = True
) -> type[T] | Callable[[type[T]], type[T]]:
    """Make ``cls`` a frozen, slotted dataclass with an ``__init__`` that sets every field
    (defaults for those left out, ``init=False`` fields their default) and then calls
    ``__post_init__``; ``==``, ``hash()`` and ``repr()`` go over the compared and shown
    fields, as the dataclass ones do. Its arguments are keyword-only unless
    ``@frozen_settings(kw_only=False)``."""
    if cls is None:
        return lambda decorated: _make(decorated, kw_only)
    return _make(cls, kw_only)


def _make(cls: type[T], kw_only: bool) -> type[T]:
    made: type[T] = dataclasses.dataclass(
        frozen=True, slots=True, kw_only=kw_only, init=False, repr=False, eq=False
    )(cls)
    fields = dataclasses.fields(made)  # type: ignore[arg-type]
    compared = tuple(field.name for field in fields if field.compare)
    shown = tuple(field.name for field in fields if field.repr)
    methods = (_init_method(made, fields, kw_only), *_value_methods(compared, shown))
    for method in methods:
        method.__qualname__ = f"{made.__qualname__}.{method.__name__}"
        setattr(made, method.__name__, method)
    return made


def _init_method(
    made: type, fields: tuple[dataclasses.Field[Any], ...], kw_only: bool
) -> Callable[..., None]:
    """The ``__init__`` of ``made``: its init fields by keyword (or position, unless
    ``kw_only``), the others set to their defaults, then ``__post_init__`` if any."""
    missing = dataclasses.MISSING
    qualname = made.__qualname__
    # (name, default) of the init fields; the default is MISSING for a required one.
    init_fields = tuple(
        (field.name, field.default)
        for field in fields
        if field.init and field.default_factory is missing
    )
    if len(init_fields) != sum(field.init for field in fields):
        raise TypeError(f"{qualname}: a default_factory is not supported here")
    known = frozenset(name for name, _ in init_fields)
    other_fields = tuple((field.name, field.default) for field in fields if not field.init)
    post_init = getattr(made, "__post_init__", None)

    def __init__(self: Any, *args: Any, **settings: Any) -> None:
        if args:
            if kw_only or len(args) > len(init_fields):
                raise TypeError(
                    f"{qualname}.__init__() takes {1 if kw_only else len(init_fields) + 1} "
                    f"positional arguments but {len(args) + 1} were given"
                )
            for (name, _), value in zip(init_fields, args, strict=False):
                if name in settings:
                    raise TypeError(f"{qualname}.__init__() got multiple values for {name!r}")
                settings[name] = value
        for name in settings:
            if name not in known:
                raise TypeError(
                    f"{qualname}.__init__() got an unexpected keyword argument {name!r}"
                )
        set_field = object.__setattr__
        for name, default in init_fields:
            value = settings.get(name, default)
            if value is missing:
                raise TypeError(
                    f"{qualname}.__init__() missing 1 required keyword-only argument: {name!r}"
                )
            set_field(self, name, value)
        for name, default in other_fields:
            set_field(self, name, default)
        if post_init is not None:
            post_init(self)

    return __init__


def _value_methods(
    compared: tuple[str, ...], shown: tuple[str, ...]
) -> tuple[Callable[..., Any], ...]:
    """``__repr__`` over the ``shown`` fields, ``__eq__`` and ``__hash__`` over ``compared``."""

    def __repr__(self: Any) -> str:
        shown_fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{type(self).__qualname__}({shown_fields})"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        mine = tuple([getattr(self, name) for name in compared])
        return mine == tuple([getattr(other, name) for name in compared])

    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, name) for name in compared))

    return __repr__, __eq__, __hash__
