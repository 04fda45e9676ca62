"""What pygls's JsonRPCProtocol does when writing a message: json.dumps with a `default` that
unstructures attrs objects through the protocol's converter (the reference our wire and
response-converter tests compare with)."""

from __future__ import annotations

import enum


def pygls_default(converter):
    def default(obj):  # an object json cannot encode
        if hasattr(obj, "__attrs_attrs__"):
            return converter.unstructure(obj)
        if isinstance(obj, enum.Enum):
            return obj.value
        return obj.__dict__
    return default
