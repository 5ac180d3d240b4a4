"""The metadata fields of an ONNX file (ModelProto's producer, domain, version, doc string,
metadata_props and the graph's name and doc string), for InferenceSession.get_modelmeta().

Switchyard's public C++ API does not expose them, so they are read here from the file's
top-level protobuf fields: the graph's nodes and weights are skipped by length and never
parsed, and the file is memory-mapped, so a 500 MB model costs a few page reads. A saved
executable (.syx) keeps none of them.
"""
import mmap

# ModelProto field numbers (onnx.proto).
_PRODUCER_NAME, _PRODUCER_VERSION, _DOMAIN, _MODEL_VERSION, _DOC_STRING, _GRAPH = 2, 3, 4, 5, 6, 7
_METADATA_PROPS = 14
# GraphProto and StringStringEntryProto field numbers.
_GRAPH_NAME, _GRAPH_DOC_STRING = 2, 10
_KEY, _VALUE = 1, 2


def _varint(buf, pos):
    result, shift = 0, 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _fields(buf, start, end):
    """(field number, wire type, value) of each field in buf[start:end]; a length-delimited
    value is its (start, end) range."""
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = None, pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value, pos = (pos, pos + length), pos + length
        elif wire == 5:
            value, pos = None, pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        if pos > end:
            raise ValueError("field past the end")
        yield number, wire, value


def _text(buf, span):
    return buf[span[0]:span[1]].decode("utf-8", errors="replace")


def _scan(buf):
    meta = {"producer_name": "", "producer_version": "", "domain": "", "version": 0,
            "description": "", "graph_name": "", "graph_description": "",
            "custom_metadata_map": {}}
    for number, wire, value in _fields(buf, 0, len(buf)):
        if wire == 2 and number in (_PRODUCER_NAME, _PRODUCER_VERSION, _DOMAIN, _DOC_STRING):
            key = {_PRODUCER_NAME: "producer_name", _PRODUCER_VERSION: "producer_version",
                   _DOMAIN: "domain", _DOC_STRING: "description"}[number]
            meta[key] = _text(buf, value)
        elif wire == 0 and number == _MODEL_VERSION:
            meta["version"] = value
        elif wire == 2 and number == _METADATA_PROPS:
            entry = {n: _text(buf, v) for n, w, v in _fields(buf, *value) if w == 2}
            meta["custom_metadata_map"][entry.get(_KEY, "")] = entry.get(_VALUE, "")
        elif wire == 2 and number == _GRAPH:
            for n, w, v in _fields(buf, *value):
                if w == 2 and n == _GRAPH_NAME:
                    meta["graph_name"] = _text(buf, v)
                elif w == 2 and n == _GRAPH_DOC_STRING:
                    meta["graph_description"] = _text(buf, v)
    return meta


def empty_model_metadata():
    """Metadata with every field empty."""
    return _scan(b"")


def read_model_metadata(path):
    """The metadata of the ONNX file at `path` (empty values where it has none, or where the
    file is not an ONNX model)."""
    empty = empty_model_metadata()
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return _scan(m)  # an mmap indexes to ints and slices to bytes, as bytes do
    except (OSError, ValueError, IndexError):
        return empty
