// ONNX's model file, read and written as far as Shoal's graph passes
// (graph_passes.mjs) need: protocol buffers' wire format, and over it the
// ModelProto -> GraphProto -> NodeProto / TensorProto / AttributeProto
// fields (numbers from onnx.proto, the format's public definition).
//
// Lossless: a message keeps every field it was read with, in order, as its
// own bytes; only what a pass changes is written anew. A graph nobody
// changes is written back byte for byte.

// ---------------------------------------------------------------- wire format

export const VARINT = 0, FIXED64 = 1, BYTES = 2, FIXED32 = 5;

// A message's fields in order: {number, wire, value, raw}, value a BigInt
// (varint), or a Uint8Array view (the bytes of a length-delimited or fixed
// field); raw the field's whole encoding (key included).
// One varint at bytes[at]: [value as a BigInt, where the next field starts].
function readVarint(bytes, at) {
  let v = 0n, shift = 0n;
  for (;;) {
    if (at >= bytes.length) throw new Error('a varint runs past the end of its message');
    const b = bytes[at++];
    v |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [v, at];
    shift += 7n;
    if (shift > 63n) throw new Error('a varint is longer than ten bytes');
  }
}

export function readFields(bytes) {
  const fields = [];
  let at = 0;
  while (at < bytes.length) {
    const start = at;
    let key, value;
    [key, at] = readVarint(bytes, at);
    const number = Number(key >> 3n), wire = Number(key & 7n);
    if (wire === VARINT) {
      [value, at] = readVarint(bytes, at);
    } else if (wire === FIXED64 || wire === FIXED32) {
      const n = wire === FIXED64 ? 8 : 4;
      if (at + n > bytes.length) throw new Error('a fixed field runs past the end of its message');
      value = bytes.subarray(at, at + n);
      at += n;
    } else if (wire === BYTES) {
      let n;
      [n, at] = readVarint(bytes, at);
      if (BigInt(at) + n > BigInt(bytes.length)) throw new Error("a field's length runs past the end of its message");
      value = bytes.subarray(at, at + Number(n));
      at += Number(n);
    } else {
      throw new Error(`wire type ${wire} is not protocol buffers' (is this an ONNX file?)`);
    }
    fields.push({ number, wire, value, raw: bytes.subarray(start, at) });
  }
  return fields;
}

function varintBytes(v) {
  let x = BigInt.asUintN(64, BigInt(v));
  const out = [];
  do {
    const b = Number(x & 0x7fn);
    x >>= 7n;
    out.push(x ? b | 0x80 : b);
  } while (x);
  return out;
}

// A field's encoding: a BigInt/number is a varint, a Uint8Array
// length-delimited, {fixed32: Uint8Array} four fixed bytes.
export function field(number, value) {
  if (typeof value === 'bigint' || typeof value === 'number') {
    return Uint8Array.from([...varintBytes((number << 3) | VARINT), ...varintBytes(value)]);
  }
  if (value.fixed32) return Uint8Array.from([...varintBytes((number << 3) | FIXED32), ...value.fixed32]);
  const head = [...varintBytes((number << 3) | BYTES), ...varintBytes(value.length)];
  const out = new Uint8Array(head.length + value.length);
  out.set(head);
  out.set(value, head.length);
  return out;
}

export function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const utf8 = new TextDecoder();
const text = (bytes) => utf8.decode(bytes);
const bytesOf = (s) => new TextEncoder().encode(s);

// ---------------------------------------------------------------- ONNX

// ModelProto 7: graph. GraphProto 1: node, 5: initializer, 11: input, 12: output.
// NodeProto 1: input, 2: output, 3: name, 4: op_type, 5: attribute, 7: domain.
// AttributeProto 1: name, 2: f, 3: i, 4: s, 5: t, 6: g, 7: floats, 8: ints,
// 11: graphs, 20: type. TensorProto 1: dims, 2: data_type, 4: float_data,
// 8: name, 9: raw_data, 14: data_location. ValueInfoProto 1: name.
// OperatorSetIdProto 1: domain, 2: version (ModelProto 8: opset_import).
export const FLOAT = 1;  // TensorProto.DataType

export function readModel(bytes) {
  const fields = readFields(bytes);
  const at = fields.findIndex((f) => f.number === 7);
  if (at < 0) throw new Error('the model has no graph');
  let opset = 0;
  for (const f of fields.filter((x) => x.number === 8)) {
    const set = readFields(f.value);
    const domain = set.find((x) => x.number === 1);
    if (!domain || domain.value.length === 0) opset = Number(set.find((x) => x.number === 2)?.value ?? 0n);
  }
  return { fields, graphAt: at, opset, graph: readGraph(fields[at].value) };
}

export function writeModel(model) {
  return concat(model.fields.map((f, i) => (i === model.graphAt ? field(7, writeGraph(model.graph)) : f.raw)));
}

function readGraph(bytes) {
  const fields = readFields(bytes);
  const graph = { fields, nodes: [], initializers: new Map(), added: [], dropped: new Set(), inputs: [], outputs: [] };
  for (const f of fields) {
    if (f.number === 1) graph.nodes.push(readNode(f.value));
    else if (f.number === 5) {
      const t = readTensor(f.value);
      graph.initializers.set(t.name, t);
      f.initializer = t.name;
    } else if (f.number === 11 || f.number === 12) {
      const name = text(readFields(f.value).find((x) => x.number === 1)?.value ?? new Uint8Array());
      (f.number === 11 ? graph.inputs : graph.outputs).push(name);
    }
  }
  return graph;
}

// The graph's fields as read, its nodes as they are now (in place of the
// first node field), less the initializers passes dropped, and the tensors
// they added as initializers at the end.
function writeGraph(graph) {
  const parts = [];
  let nodesWritten = false;
  for (const f of graph.fields) {
    if (f.number !== 1) {
      if (!graph.dropped.has(f.initializer)) parts.push(f.raw);
    } else if (!nodesWritten) {
      nodesWritten = true;
      for (const n of graph.nodes) parts.push(field(1, n.raw ?? writeNode(n)));
    }
  }
  if (!nodesWritten) for (const n of graph.nodes) parts.push(field(1, n.raw ?? writeNode(n)));
  for (const t of graph.added) parts.push(field(5, writeTensor(t)));
  return concat(parts);
}

// A node: {input, output, name, opType, domain, attrs: Map name -> attr,
// rest: its other fields, raw: its bytes while unchanged}. A pass that
// changes a node sets raw to null.
function readNode(bytes) {
  const n = { input: [], output: [], name: '', opType: '', domain: '', attrs: new Map(), rest: [], raw: null };
  for (const f of readFields(bytes)) {
    if (f.number === 1) n.input.push(text(f.value));
    else if (f.number === 2) n.output.push(text(f.value));
    else if (f.number === 3) n.name = text(f.value);
    else if (f.number === 4) n.opType = text(f.value);
    else if (f.number === 7) n.domain = text(f.value);
    else if (f.number === 5) {
      const a = readAttribute(f.value);
      n.attrs.set(a.name, a);
    } else n.rest.push(f.raw);
  }
  n.raw = bytes;
  return n;
}

export function writeNode(n) {
  const parts = [];
  for (const s of n.input) parts.push(field(1, bytesOf(s)));
  for (const s of n.output) parts.push(field(2, bytesOf(s)));
  if (n.name) parts.push(field(3, bytesOf(n.name)));
  parts.push(field(4, bytesOf(n.opType)));
  for (const a of n.attrs.values()) parts.push(field(5, a.raw ?? writeAttribute(a)));
  if (n.domain) parts.push(field(7, bytesOf(n.domain)));
  parts.push(...n.rest);
  return concat(parts);
}

export function node(opType, input, output, attrs = []) {
  return { input, output, name: output[0], opType, domain: '', attrs: new Map(attrs.map((a) => [a.name, a])), rest: [], raw: null };
}

// An attribute: {name, type, f, i, s, ints, t (a tensor), subgraph (a GRAPH
// or GRAPHS attribute), raw}.
function readAttribute(bytes) {
  const a = { name: '', type: 0, ints: [], subgraph: false, raw: bytes };
  for (const f of readFields(bytes)) {
    if (f.number === 1) a.name = text(f.value);
    else if (f.number === 20) a.type = Number(f.value);
    else if (f.number === 2) a.f = new DataView(f.value.buffer, f.value.byteOffset, 4).getFloat32(0, true);
    else if (f.number === 3) a.i = BigInt.asIntN(64, f.value);
    else if (f.number === 4) a.s = text(f.value);
    else if (f.number === 5) a.t = readTensor(f.value);
    else if (f.number === 6 || f.number === 11) a.subgraph = true;
    else if (f.number === 8) {
      if (f.wire === BYTES) a.ints.push(...readPacked(f.value));
      else a.ints.push(BigInt.asIntN(64, f.value));
    }
  }
  return a;
}

const ATTR_FLOAT = 1, ATTR_INT = 2, ATTR_INTS = 7;
export const floatAttr = (name, f) => ({ name, type: ATTR_FLOAT, f, ints: [], raw: null });
export const intAttr = (name, i) => ({ name, type: ATTR_INT, i: BigInt(i), ints: [], raw: null });
export const intsAttr = (name, ints) => ({ name, type: ATTR_INTS, ints: ints.map(BigInt), raw: null });

function writeAttribute(a) {
  const parts = [field(1, bytesOf(a.name))];
  if (a.type === ATTR_FLOAT) {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, a.f, true);
    parts.push(field(2, { fixed32: b }));
  } else if (a.type === ATTR_INT) {
    parts.push(field(3, a.i));
  } else if (a.type === ATTR_INTS) {
    for (const i of a.ints) parts.push(field(8, i));
  } else {
    throw new Error(`attribute '${a.name}': only float, int and ints attributes are written`);
  }
  parts.push(field(20, a.type));
  return concat(parts);
}

// A packed repeated int64 field's values.
function readPacked(bytes) {
  const out = [];
  for (let at = 0, v; at < bytes.length;) {
    [v, at] = readVarint(bytes, at);
    out.push(BigInt.asIntN(64, v));
  }
  return out;
}

// A tensor: {name, dims (numbers), dataType, external, data: Float32Array
// for a FLOAT tensor held in the file}.
function readTensor(bytes) {
  const t = { name: '', dims: [], dataType: 0, external: false, data: null };
  const floats = [];
  let raw = null;
  for (const f of readFields(bytes)) {
    if (f.number === 1) {
      if (f.wire === BYTES) t.dims.push(...readPacked(f.value).map(Number));
      else t.dims.push(Number(BigInt.asIntN(64, f.value)));
    } else if (f.number === 2) t.dataType = Number(f.value);
    else if (f.number === 8) t.name = text(f.value);
    else if (f.number === 9) raw = f.value;
    else if (f.number === 14) t.external = Number(f.value) === 1;
    else if (f.number === 4) {
      const v = f.value;
      const view = new DataView(v.buffer, v.byteOffset, v.length);
      for (let k = 0; k + 4 <= v.length; k += 4) floats.push(view.getFloat32(k, true));
    }
  }
  if (t.dataType === FLOAT && !t.external) {
    const n = t.dims.reduce((a, b) => a * b, 1);
    if (raw) {
      if (raw.length !== n * 4) throw new Error(`tensor '${t.name}': ${raw.length} bytes of data for ${n} floats`);
      t.data = new Float32Array(raw.slice().buffer);  // a copy: the view need not be 4-aligned
    } else {
      if (floats.length !== n) throw new Error(`tensor '${t.name}': ${floats.length} floats for ${n}`);
      t.data = Float32Array.from(floats);
    }
  }
  return t;
}

export function writeTensor(t) {
  return concat([
    ...t.dims.map((d) => field(1, d)), field(2, FLOAT), field(8, bytesOf(t.name)),
    field(9, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)),
  ]);
}

export function tensor(name, dims, data) {
  return { name, dims, dataType: FLOAT, external: false, data: Float32Array.from(data) };
}
