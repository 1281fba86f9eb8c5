"""Shims for the third-party libraries that the reference engine imports but
this machine lacks, or has in too old a version.

- `msgspec` (not packaged here; installed only where it is missing): the
  engine declares its request, event and output records (`SamplingParams`,
  `EngineCoreOutput`, `BlockStored`, ...) as `msgspec.Struct` subclasses.
  The shim makes each subclass a plain dataclass with the same fields,
  defaults and `__post_init__`. msgspec's encoders are not provided: nothing
  on the manager and scheduler path serialises.
- `pydantic` (not packaged here): the engine's config classes and two
  sampling records are pydantic dataclasses. The shim makes them standard
  dataclasses: field constraints and field validators are not checked
  (they only reject or coerce bad input), and `model_validator(mode=
  "after")` methods run after `__post_init__`, as pydantic runs them,
  because some fill defaults (`CacheConfig.block_size`). The shim is on
  `sys.modules` only inside `import_shims()`, while the loader imports
  those modules, so that no other code in the process takes it for
  pydantic.
- `prometheus_client` (not packaged here): the engine's metrics modules
  name its metric classes at import; the shim's classes refuse to be
  instantiated (nothing on the scheduler path exports metrics). It is on
  `sys.modules` only inside `import_shims()`, like the pydantic shim.
- `safetensors` (not packaged here): the example KV connector, which the
  scheduler tests configure, imports it for its worker side (saving and
  loading KV tensors); the shim's file functions refuse. Temporary, like
  the two above.
- `typing_extensions.TypeIs` and `deprecated` (typing_extensions 4.4
  predates both): `TypeIs` is used in annotations only, and `TypeGuard`
  stands in; `deprecated(message)` marks classes and functions, and here
  leaves them as they are (no DeprecationWarning on use).
"""
import contextlib
import copy
import dataclasses
import importlib.util
import sys
import types
import typing

import typing_extensions


def _module(name, doc, **attrs):
    """A module object named `name` holding `attrs`."""
    module = types.ModuleType(name, doc)
    module.__dict__.update(attrs)
    return module


def _factories_for_mutable_defaults(cls):
    """Replace the empty `[]`, `{}` and `set()` class-level defaults, which
    msgspec and pydantic copy per instance but `dataclasses` rejects, with
    default factories."""
    for attr, hint in cls.__dict__.get("__annotations__", {}).items():
        value = cls.__dict__.get(attr)
        if (isinstance(value, (list, dict, set, bytearray))
                and "ClassVar" not in str(hint)):
            setattr(cls, attr, dataclasses.field(
                default_factory=lambda value=value: copy.copy(value)))


class _NoDefault:
    """msgspec's marker for "no default given"."""

    def __repr__(self):
        return "NODEFAULT"


NODEFAULT = _NoDefault()


def _msgspec_field(*, default=NODEFAULT, default_factory=NODEFAULT,
                   name=None):
    """msgspec.field: a default or a default factory (`name`, the encoded
    field name, does not matter without serialisation)."""
    del name
    if default_factory is not NODEFAULT:
        return dataclasses.field(default_factory=default_factory)
    if default is not NODEFAULT:
        return dataclasses.field(default=default)
    return dataclasses.field()


class Struct:
    """msgspec.Struct as a dataclass base.

    A subclass's class keywords are accepted: `kw_only`, `frozen`, `eq` and
    `order` keep their meaning; the encoding options (`omit_defaults`,
    `array_like`, `tag`, `gc`, `dict`, ...) are ignored."""

    def __init_subclass__(cls, **options):
        super().__init_subclass__()
        _factories_for_mutable_defaults(cls)
        dataclasses.dataclass(
            cls,
            kw_only=options.get("kw_only", False),
            frozen=options.get("frozen", False),
            eq=options.get("eq", True),
            order=options.get("order", False))
        cls.__struct_fields__ = tuple(
            f.name for f in dataclasses.fields(cls))


def msgspec_modules():
    """The `msgspec` shim and its `msgspec.structs` (fields and replace
    over the dataclass fields), keyed by module name."""
    structs = _module("msgspec.structs", "msgspec.structs over dataclasses",
                      fields=dataclasses.fields, replace=dataclasses.replace)
    msgspec = _module("msgspec", "msgspec shim: Struct as a dataclass",
                      Struct=Struct, field=_msgspec_field,
                      NODEFAULT=NODEFAULT, structs=structs)
    return {"msgspec": msgspec, "msgspec.structs": structs}


class FieldInfo:
    """pydantic.fields.FieldInfo, for `isinstance` checks only: `Field()`
    returns a `dataclasses.Field`."""


def _pydantic_field(default=dataclasses.MISSING, *,
                    default_factory=dataclasses.MISSING, init=True,
                    **constraints):
    """pydantic.Field: its default, default factory and `init`; the
    constraints (`ge=`, `gt=`, `le=`, ...) and documentation are dropped."""
    del constraints
    return dataclasses.field(default=default,
                             default_factory=default_factory, init=init)


def _field_validator(*fields, **options):
    """pydantic.field_validator: the validator is kept but never run."""
    del fields, options
    return lambda function: function


def _model_validator(*, mode):
    """pydantic.model_validator: an "after" validator is marked to run
    after `__post_init__`; "before" and "wrap" validators (which only check
    or coerce raw input) are never run."""

    def decorator(function):
        if mode == "after":
            function.__pydantic_after_validator__ = True
        return function

    return decorator


class SkipValidation:
    """pydantic.SkipValidation: `SkipValidation[T]` is `T`."""

    def __class_getitem__(cls, item):
        return item


def _pydantic_dataclass(cls=None, /, *, config=None, **kwargs):
    """pydantic.dataclasses.dataclass: the standard decorator (pydantic's
    `config=` is dropped), whose `__init__` then runs the class's "after"
    model validators in definition order."""
    del config

    def decorate(cls):
        _factories_for_mutable_defaults(cls)
        cls = dataclasses.dataclass(cls, **kwargs)
        validators = [
            value for klass in reversed(cls.__mro__)
            for value in vars(klass).values()
            if getattr(value, "__pydantic_after_validator__", False)]
        if validators:
            init = cls.__init__

            def __init__(self, *args, **kw):
                init(self, *args, **kw)
                for validator in validators:
                    validator(self)

            __init__.__wrapped__ = init
            cls.__init__ = __init__
        return cls

    return decorate if cls is None else decorate(cls)


def pydantic_modules():
    """The `pydantic` shim, `pydantic.dataclasses` and `pydantic.fields`,
    keyed by module name."""
    dataclasses_module = _module(
        "pydantic.dataclasses", "pydantic.dataclasses shim",
        dataclass=_pydantic_dataclass)
    fields = _module("pydantic.fields", "pydantic.fields shim",
                     Field=_pydantic_field, FieldInfo=FieldInfo)
    pydantic = _module(
        "pydantic", "pydantic shim: dataclasses without validation",
        ConfigDict=dict, Field=_pydantic_field, SkipValidation=SkipValidation,
        field_validator=_field_validator, model_validator=_model_validator,
        dataclasses=dataclasses_module, fields=fields)
    return {"pydantic": pydantic, "pydantic.dataclasses": dataclasses_module,
            "pydantic.fields": fields}


class _Metric:
    """A prometheus_client metric class that cannot be instantiated."""

    def __init__(self, *args, **kwargs):
        del args, kwargs
        raise NotImplementedError("prometheus_client is not installed")


def _no_safetensors(*args, **kwargs):
    """safetensors.torch.load_file and save_file: not available."""
    del args, kwargs
    raise NotImplementedError("safetensors is not installed")


def safetensors_modules():
    """The `safetensors` shim and its `safetensors.torch`, whose file
    functions refuse."""
    torch_module = _module("safetensors.torch", "safetensors.torch shim",
                           load_file=_no_safetensors,
                           save_file=_no_safetensors)
    return {"safetensors": _module("safetensors", "safetensors shim",
                                   torch=torch_module),
            "safetensors.torch": torch_module}


def prometheus_modules():
    """The `prometheus_client` shim: Counter, Gauge and Histogram."""
    return {"prometheus_client": _module(
        "prometheus_client", "prometheus_client shim: metric class names",
        Counter=type("Counter", (_Metric,), {}),
        Gauge=type("Gauge", (_Metric,), {}),
        Histogram=type("Histogram", (_Metric,), {}))}


@contextlib.contextmanager
def import_shims():
    """Put the pydantic, prometheus_client and safetensors shims on
    `sys.modules` for the duration of the block, each only where the real
    library is missing."""
    modules = {}
    for top, shims in (("pydantic", pydantic_modules),
                       ("prometheus_client", prometheus_modules),
                       ("safetensors", safetensors_modules)):
        if importlib.util.find_spec(top) is None:
            modules.update(shims())
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name in modules:
            del sys.modules[name]


def _deprecated(message, /, *, category=DeprecationWarning, stacklevel=1):
    """typing_extensions.deprecated, without the warning."""
    del message, category, stacklevel
    return lambda marked: marked


def install():
    """Install the permanent shims this machine needs (msgspec and the
    typing_extensions names)."""
    if importlib.util.find_spec("msgspec") is None:
        sys.modules.update(msgspec_modules())
    if not hasattr(typing_extensions, "TypeIs"):
        typing_extensions.TypeIs = typing.TypeGuard
    if not hasattr(typing_extensions, "deprecated"):
        typing_extensions.deprecated = _deprecated
