"""Declarative, versioned message schemas and the generic encoder/decoder that walks them.

A Kafka struct is a class whose fields are declared with :func:`kafka_field`, in wire order,
mirroring Apache Kafka's ``message/*.json`` schemas::

    class PartitionProduceData(Struct):
        index: int = kafka_field(INT32, "0+")
        records: Records | None = kafka_field(RECORDS, "0+", nullable="0+")

A struct behaves like a ``@dataclass(slots=True, kw_only=True)``: slots, a keyword-only
``__init__`` with the fields' defaults, ``==`` and ``repr()`` over its fields. Its metaclass,
:class:`StructType`, builds it without compiling code at import time: the ``__init__`` is
compiled when the first instance is made, so the APIs a program never uses cost only their
class statements (see docs/performance.md, "Start-up").

The first time a struct is used at a given (version, flexible) pair, its fields are compiled
into a flat list of reader/writer functions (memoised, never mutated afterwards), so encoding and
decoding walk a short list instead of re-interpreting the schema per field.

Flexible versions (KIP-482) change three things, all handled here: strings, bytes and arrays
use compact (uvarint) lengths; every struct ends with a tagged-field section; fields may be
tagged (written only when they differ from their default, ordered by tag).
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    NamedTuple,
    Protocol,
    TypeAlias,
    TypeVar,
    overload,
)

from kafkaline.errors import DecodeError, EncodeError
from kafkaline.protocol import primitives as p
from kafkaline.protocol.fields import (
    MISSING,
    DeclaredField,
    FieldDeclaration,
    FieldSpec,
    declared_fields,
    kafka_field,
)
from kafkaline.protocol.kinds import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    NO_VERSIONS,
    RECORDS,
    STRING,
    UINT16,
    UINT32,
    UUID,
    ArrayKind,
    Codec,
    Kind,
    LengthPrefixedKind,
    ReadFn,
    Records,
    ScalarKind,
    Versions,
    WriteFn,
)
from kafkaline.protocol.primitives import Buffer, Reader

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
elif sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # Python 3.10: only type checkers read it

    def dataclass_transform(**_: object) -> Callable[[T], T]:
        return lambda decorated: decorated


# The field kinds and versions are declared in kafkaline.protocol.kinds; the API modules
# import them from here, with the structs.
__all__ = [
    "BOOL",
    "BYTES",
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "NO_VERSIONS",
    "RECORDS",
    "STRING",
    "UINT16",
    "UINT32",
    "UUID",
    "ArrayKind",
    "BodyWriter",
    "Codec",
    "CompiledStruct",
    "DeclaredField",
    "FieldDeclaration",
    "FieldSpec",
    "Kind",
    "LengthPrefixedKind",
    "Message",
    "ReadFn",
    "Records",
    "Request",
    "Response",
    "ScalarKind",
    "Struct",
    "StructKind",
    "StructType",
    "Versions",
    "WriteFn",
    "array_of",
    "compile_struct",
    "declared_fields",
    "decode_message",
    "kafka_field",
    "read_message",
    "struct_of",
]

T = TypeVar("T")
S = TypeVar("S", bound="Struct")
R = TypeVar("R", bound="Message")


class BodyWriter(Protocol):
    """What writes a message's body into a frame: its :class:`CompiledStruct`, or a writer
    of the message class's own (see ``ProduceRequest.body_writer``)."""

    def write(self, out: bytearray, obj: Any, /) -> None:
        """Append ``obj``'s encoding to ``out``."""
        ...


class StructKind(Kind[S]):
    """A nested struct, encoded inline (plus its tagged fields in flexible versions)."""

    __slots__ = ("struct_type",)

    def __init__(self, struct_type: type[S]) -> None:
        self.struct_type = struct_type

    @property
    def kafka_type(self) -> str:
        return self.struct_type.__name__

    def new_default(self) -> S:
        return self.struct_type()

    def codec(self, version: int, flexible: bool, nullable: bool) -> Codec:
        if nullable:
            raise TypeError("nullable structs are not supported (no declared API uses them)")
        compiled = compile_struct(self.struct_type, version, flexible)
        return Codec(compiled.read, compiled.write)


@overload
def array_of(item: type[S]) -> Kind[list[S]]: ...
@overload
def array_of(item: Kind[T]) -> Kind[list[T]]: ...
def array_of(item: type[Struct] | Kind[Any]) -> Kind[list[Any]]:
    """An array of a kind (``array_of(INT32)``) or of a struct (``array_of(TopicProduceData)``)."""
    if isinstance(item, Kind):
        return ArrayKind(item)
    return ArrayKind(StructKind(item))


def struct_of(struct_type: type[S]) -> Kind[S]:
    """A single nested struct field (Kafka's non-array struct types, e.g. ``CurrentLeader``)."""
    return StructKind(struct_type)


# --------------------------------------------------------------------------- structs


@dataclass_transform(kw_only_default=True)
class StructType(type):
    """The metaclass of every :class:`Struct`.

    Like ``@dataclass(slots=True, kw_only=True)``, it turns the class body's
    :func:`kafka_field` declarations into ``__slots__`` and a keyword-only ``__init__``
    (with ``==`` and ``repr()`` inherited from :class:`Struct`). Unlike it, it compiles no code
    when the class is made: ``__init__`` is compiled by the first call, since most of the APIs
    declared are never used by a given program.
    """

    def __new__(
        mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> StructType:
        own = [(key, value) for key, value in namespace.items() if _is_declaration(value)]
        for key, annotation in namespace.get("__annotations__", {}).items():
            # Annotations are strings here (every module declaring structs has
            # `from __future__ import annotations`).
            if not _is_declaration(namespace.get(key)) and "ClassVar" not in str(annotation):
                raise TypeError(f"{name}.{key} is not a kafka_field()")
        if "__slots__" in namespace:
            if own:
                raise TypeError(f"{name} declares __slots__ and kafka_field()s")
        else:
            for key, _ in own:
                del namespace[key]
            namespace["__slots__"] = tuple(key for key, _ in own)
        inherited: tuple[tuple[str, FieldDeclaration], ...] = ()
        for base in bases:
            inherited += getattr(base, "__kafka_fields__", ())
        namespace["__kafka_fields__"] = inherited + tuple(own)
        namespace.setdefault("__init__", _init_compiling_at_first_call)
        return super().__new__(mcs, name, bases, namespace, **kwargs)


def _is_declaration(value: object) -> bool:
    return isinstance(value, FieldDeclaration)


def _init_compiling_at_first_call(self: Struct, *args: Any, **values: Any) -> None:
    # Replaces itself on the class with the compiled __init__, then makes this instance.
    cls = type(self)
    init = _compile_init(cls)
    cls.__init__ = init  # type: ignore[method-assign]
    init(self, *args, **values)


def _compile_init(cls: type[Struct]) -> Callable[..., None]:
    """A keyword-only ``__init__`` setting every field, as @dataclass writes one."""
    namespace: dict[str, Any] = {"_MISSING": MISSING}
    parameters = []
    lines = []
    for index, (name, declaration) in enumerate(cls.__kafka_fields__):
        if declaration.default_factory is None:
            namespace[f"_default_{index}"] = declaration.default
            parameters.append(f"{name}=_default_{index}")
            lines.append(f"self.{name} = {name}")
        else:
            namespace[f"_factory_{index}"] = declaration.default_factory
            parameters.append(f"{name}=_MISSING")
            lines.append(f"self.{name} = _factory_{index}() if {name} is _MISSING else {name}")
    signature = ", ".join(["self", "*", *parameters]) if parameters else "self"
    body = "".join(f"    {line}\n" for line in lines or ["pass"])
    exec(f"def __init__({signature}):\n{body}", namespace)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


class Struct(metaclass=StructType):
    """Base of every declared Kafka struct: slotted, keyword-only, compared and shown by its
    fields (see :class:`StructType`)."""

    __slots__ = ()

    #: The declared fields in wire order, this class's after its bases'.
    __kafka_fields__: ClassVar[tuple[tuple[str, FieldDeclaration], ...]]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = [name for name, _ in self.__kafka_fields__]
        return [getattr(self, name) for name in names] == [getattr(other, name) for name in names]

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass with eq

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name, _ in self.__kafka_fields__)
        return f"{type(self).__qualname__}({fields})"


class _TaggedField(NamedTuple):
    tag: int
    name: str
    codec: Codec
    default: Any


# One step of a compiled struct: a single field (name, None, read, write) or a run of
# fixed-width fields handled by one struct.Struct (names, packer, None, per-field writers, the
# latter only to name the culprit in error messages).
_Step: TypeAlias = tuple[Any, Any, Any, Any]

_ENCODE_FAILURES = (TypeError, AttributeError, ValueError, struct.error)


class CompiledStruct:
    """A struct's fields at one (version, flexible) pair, flattened for fast walking.

    Consecutive fixed-width fields are merged into one ``struct.Struct``: a Produce response
    partition (index, error_code, base_offset, log_append_time_ms, log_start_offset) is one
    ``unpack_from`` instead of five reads, which nearly halves decoding a flexible
    ProduceResponse (docs/performance.md, "Notes moved from the code").
    """

    __slots__ = ("_flexible", "_steps", "_struct_type", "_tagged", "_tagged_by_tag")

    def __init__(self, struct_type: type[Struct], version: int, flexible: bool) -> None:
        self._struct_type = struct_type
        self._flexible = flexible
        regular: list[tuple[str, Codec]] = []
        tagged: list[_TaggedField] = []
        for field in declared_fields(struct_type):
            spec = field.spec
            if version not in spec.versions:
                continue
            field_flexible = (
                flexible if spec.flexible_versions is None else version in spec.flexible_versions
            )
            codec = spec.kind.codec(version, field_flexible, version in spec.nullable_versions)
            if flexible and version in spec.tagged_versions and spec.tag is not None:
                tagged.append(_TaggedField(spec.tag, field.name, codec, field.default))
            else:
                regular.append((field.name, codec))
        tagged.sort(key=lambda field: field.tag)
        self._steps = _merge_fixed_width_runs(regular)
        self._tagged = tuple(tagged)
        self._tagged_by_tag = {field.tag: field for field in tagged}

    def read(self, reader: Reader) -> Any:
        """Decode one struct."""
        values: dict[str, Any] = {}
        for names, packer, read, _ in self._steps:
            if packer is None:
                values[names] = read(reader)
            else:
                values.update(zip(names, reader.unpack(packer), strict=True))
        if self._flexible:
            for _ in range(reader.tagged_field_count()):
                tag = reader.unsigned_varint()
                size = reader.unsigned_varint()
                field_reader = reader.sub_reader(size)
                field = self._tagged_by_tag.get(tag)
                if field is None:
                    continue  # unknown tags are skipped: they are how Kafka adds fields
                values[field.name] = field.codec.read(field_reader)
                field_reader.expect_end(f"tagged field {tag} of {self._struct_type.__name__}")
        return self._struct_type(**values)

    def write(self, out: bytearray, obj: Any) -> None:
        """Encode one struct."""
        for names, packer, _, write in self._steps:
            if packer is None:
                try:
                    write(out, getattr(obj, names))
                except _ENCODE_FAILURES as exc:
                    raise self._encode_error(names, exc) from None
            else:
                try:
                    out += packer.pack(*[getattr(obj, name) for name in names])
                except _ENCODE_FAILURES:
                    raise self._precise_encode_error(names, write, obj) from None
        if self._flexible:
            self._write_tagged(out, obj)

    def _precise_encode_error(
        self, names: tuple[str, ...], writers: tuple[WriteFn, ...], obj: Any
    ) -> EncodeError:
        # A merged run failed: encode its fields one by one to name the culprit.
        for name, write in zip(names, writers, strict=True):
            try:
                write(bytearray(), getattr(obj, name))
            except _ENCODE_FAILURES as exc:
                return self._encode_error(name, exc)
        return EncodeError(f"{self._struct_type.__name__}: cannot encode {names}")

    def _encode_error(self, name: str, exc: Exception) -> EncodeError:
        # Nested structs prefix their own path, so the message reads outermost first.
        return EncodeError(f"{self._struct_type.__name__}.{name}: {exc}")

    def _write_tagged(self, out: bytearray, obj: Any) -> None:
        if not self._tagged:
            out.append(0)
            return
        present: list[tuple[int, bytearray]] = []
        for field in self._tagged:
            value = getattr(obj, field.name)
            if value != field.default:
                data = bytearray()
                try:
                    field.codec.write(data, value)
                except _ENCODE_FAILURES as exc:
                    raise self._encode_error(field.name, exc) from None
                present.append((field.tag, data))
        p.write_tagged_fields(out, present)


def _merge_fixed_width_runs(fields: list[tuple[str, Codec]]) -> tuple[_Step, ...]:
    steps: list[_Step] = []
    run: list[tuple[str, Codec]] = []

    def flush() -> None:
        if len(run) == 1:
            name, codec = run[0]
            steps.append((name, None, codec.read, codec.write))
        elif run:
            packer = struct.Struct(">" + "".join(codec.struct_format or "" for _, codec in run))
            names = tuple(name for name, _ in run)
            steps.append((names, packer, None, tuple(codec.write for _, codec in run)))
        run.clear()

    for name, codec in fields:
        if codec.struct_format is None:
            flush()
            steps.append((name, None, codec.read, codec.write))
        else:
            run.append((name, codec))
    flush()
    return tuple(steps)


# Memo of compiled structs. Schemas are constants, so this only ever caches pure results; a race
# between threads at worst compiles the same struct twice.
_COMPILED: dict[tuple[type[Struct], int, bool], CompiledStruct] = {}


def compile_struct(struct_type: type[Struct], version: int, flexible: bool) -> CompiledStruct:
    """The compiled form of a struct at a version (memoised: schemas are constant)."""
    key = (struct_type, version, flexible)
    compiled = _COMPILED.get(key)
    if compiled is None:
        compiled = _COMPILED.setdefault(key, CompiledStruct(struct_type, version, flexible))
    return compiled


# --------------------------------------------------------------------------- messages


class Message(Struct):
    """A top-level versioned message: a request or response body, or a header."""

    __slots__ = ()

    #: The versions kafkaline implements (may start above Kafka's validVersions).
    VALID_VERSIONS: ClassVar[Versions]
    #: The versions that use the flexible (KIP-482) encoding.
    FLEXIBLE_VERSIONS: ClassVar[Versions]

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        """Whether ``version`` uses compact encodings and tagged fields."""
        return version in cls.FLEXIBLE_VERSIONS

    def encode_into(self, out: bytearray, version: int) -> None:
        """Append this message's body at ``version`` to ``out``."""
        cls = type(self)
        if version not in cls.VALID_VERSIONS:
            raise EncodeError(
                f"{cls.__name__} version {version} is not supported "
                f"(kafkaline implements {cls.VALID_VERSIONS})"
            )
        compile_struct(cls, version, version in cls.FLEXIBLE_VERSIONS).write(out, self)

    def encode(self, version: int) -> bytes:
        """This message's body at ``version`` (no size prefix, no header)."""
        out = bytearray()
        self.encode_into(out, version)
        return bytes(out)

    @classmethod
    def decode(cls: type[R], data: Buffer, version: int) -> R:
        """Decode a body at ``version``; all of ``data`` must be consumed.

        Raises :class:`~kafkaline.errors.DecodeError` on truncated, malformed or trailing bytes.
        """
        return decode_message(cls, Reader(data), version)


def read_message(cls: type[R], reader: Reader, version: int) -> R:
    """Read one ``cls`` at ``version`` from ``reader``, leaving any bytes after it unread."""
    if version not in cls.VALID_VERSIONS:
        raise DecodeError(
            f"{cls.__name__} version {version} is not supported "
            f"(kafkaline implements {cls.VALID_VERSIONS})"
        )
    message: R = compile_struct(cls, version, version in cls.FLEXIBLE_VERSIONS).read(reader)
    return message


def decode_message(cls: type[R], reader: Reader, version: int) -> R:
    """Decode one ``cls`` at ``version`` from the rest of ``reader``; trailing bytes are an
    error (they mean the peer used another version than we think)."""
    message = read_message(cls, reader, version)
    reader.expect_end(f"{cls.__name__} v{version}")
    return message


class Response(Message):
    """Base of every response body."""

    __slots__ = ()

    API_KEY: ClassVar[int]


class Request(Message):
    """Base of every request body."""

    __slots__ = ()

    API_KEY: ClassVar[int]

    #: The response class the broker answers with.
    RESPONSE_TYPE: ClassVar[type[Response]]

    def has_response(self) -> bool:
        """Whether the broker answers this request (False only for Produce with acks=0)."""
        return True
