"""Broker error codes to classes: :func:`error_for_code` and :func:`raise_for_code`."""

from __future__ import annotations

from kafkaline.errors import broker_codes_from_60, broker_codes_to_59
from kafkaline.errors.base import BrokerError


def _classes_by_code() -> dict[int, type[BrokerError]]:
    """Every class of the two code modules that declares its own ``code`` (``BrokerError``
    itself, imported there, does not count), keyed by it; two classes declaring one code is
    a mistake in those modules, caught here at import."""
    by_code: dict[int, type[BrokerError]] = {}
    for module in (broker_codes_to_59, broker_codes_from_60):
        for cls in vars(module).values():
            if (
                isinstance(cls, type)
                and issubclass(cls, BrokerError)
                and cls is not BrokerError
                and "code" in vars(cls)
            ):
                if cls.code in by_code and by_code[cls.code] is not cls:
                    raise AssertionError(f"error code {cls.code} has two classes: {cls}")
                by_code[cls.code] = cls
    return by_code


_BY_CODE = _classes_by_code()


def error_for_code(code: int) -> type[BrokerError]:
    """The class for a broker error code; unknown codes map to a fresh subclass that keeps the
    code, so nothing is lost."""
    try:
        return _BY_CODE[code]
    except KeyError:
        return type(
            f"UnknownBrokerError{code}",
            (BrokerError,),
            {"code": code, "name": f"UNKNOWN_ERROR_CODE_{code}", "__module__": "kafkaline.errors"},
        )


def raise_for_code(code: int, message: str | None = None) -> None:
    """Raise the broker error for ``code`` unless it is 0 (no error)."""
    if code:
        raise error_for_code(code)(message)
