"""Declaring a struct's fields: :func:`kafka_field` (the wire spec of one field, as in Kafka's
JSON schemas) and reading the declarations back (:func:`declared_fields`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, overload

from kafkaline.protocol.kinds import NO_VERSIONS, Kind, Versions

if TYPE_CHECKING:
    from kafkaline.protocol.schema import Struct

__all__ = [
    "MISSING",
    "DeclaredField",
    "FieldDeclaration",
    "FieldSpec",
    "declared_fields",
    "kafka_field",
]

T = TypeVar("T")


class FieldSpec(NamedTuple):
    """Everything the wire needs to know about one field, as in Kafka's JSON schema."""

    kind: Kind[Any]
    versions: Versions
    nullable_versions: Versions
    tagged_versions: Versions
    tag: int | None
    #: Overrides the message's flexible versions for this field (RequestHeader.ClientId).
    flexible_versions: Versions | None


class _Missing:
    pass


MISSING: Any = _Missing()


class FieldDeclaration:
    """What :func:`kafka_field` puts in a struct's class body: the field's wire spec and its
    default (a value, or a factory making a fresh one). :class:`StructType` collects them."""

    __slots__ = ("default", "default_factory", "spec")

    def __init__(
        self, spec: FieldSpec, default: Any, default_factory: Callable[[], Any] | None
    ) -> None:
        self.spec = spec
        self.default = default
        self.default_factory = default_factory

    def new_default(self) -> Any:
        """The field's default (a fresh one for mutable kinds)."""
        return self.default if self.default_factory is None else self.default_factory()


@overload
def kafka_field(
    kind: Kind[T],
    versions: str,
    *,
    nullable: None = None,
    tagged: str | None = None,
    tag: int | None = None,
    default: T = MISSING,
    flexible: str | None = None,
) -> T: ...
@overload
def kafka_field(
    kind: Kind[T],
    versions: str,
    *,
    nullable: str,
    tagged: str | None = None,
    tag: int | None = None,
    default: T | None = MISSING,
    flexible: str | None = None,
) -> T | None: ...
def kafka_field(
    kind: Kind[Any],
    versions: str,
    *,
    nullable: str | None = None,
    tagged: str | None = None,
    tag: int | None = None,
    default: Any = MISSING,
    flexible: str | None = None,
) -> Any:
    """Declare a struct field's wire format.

    ``versions``, ``nullable`` (nullableVersions), ``tagged`` (taggedVersions) and ``flexible``
    (a field-level flexibleVersions override) use Kafka's range syntax. ``default`` is the
    schema's default; without one the kind's default applies (0, "", [], a default struct).
    """
    if (tagged is None) != (tag is None):
        raise TypeError("a tagged field needs both tagged= and tag=")
    spec = FieldSpec(
        kind=kind,
        versions=_parse_versions(versions),
        nullable_versions=_parse_versions(nullable) if nullable else NO_VERSIONS,
        tagged_versions=_parse_versions(tagged) if tagged else NO_VERSIONS,
        tag=tag,
        flexible_versions=_parse_versions(flexible) if flexible else None,
    )
    if default is not MISSING:
        return FieldDeclaration(spec, default, None)
    return FieldDeclaration(spec, None, kind.new_default)


# The few range texts ("0+", "3-8", ...) recur across hundreds of fields: parse each once.
_PARSED_VERSIONS: dict[str, Versions] = {}


def _parse_versions(text: str) -> Versions:
    versions = _PARSED_VERSIONS.get(text)
    if versions is None:
        versions = _PARSED_VERSIONS[text] = Versions.parse(text)
    return versions


class DeclaredField(NamedTuple):
    """A struct field as declared: its Python name and its wire spec."""

    name: str
    spec: FieldSpec
    #: The default value (a fresh one for mutable kinds).
    default: Any


def declared_fields(struct_type: type[Struct]) -> tuple[DeclaredField, ...]:
    """The declared fields of a struct, in wire order."""
    return tuple(
        DeclaredField(name, declaration.spec, declaration.new_default())
        for name, declaration in struct_type.__kafka_fields__
    )
