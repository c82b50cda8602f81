// Shoal's passes over a bare graph (a pipeline stage) before ONNX Runtime
// loads it: exact rewrites of what exporters leave as chains of scalar
// elementwise ops, which ORT runs one memory pass each and which break its
// blocked (NCHWc) convolution layout in two around every convolution.
//
// PaddleOCR's exports are the case in point: every layer of PP-LCNetV3 is
// Conv -> x*s1+b1 -> hardswish written as x*clip(x+3, 0, 6)/6 -> x*s2+b2 (a
// "learnable affine block" on each side), eight elementwise ops and two
// layout reorders a convolution; the recognizer spent 56 % of its time in
// them (docs/benchmarks.md "OCR"). The passes, in order:
//
//   1. hardswish: x*clip(x+3, 0, 6)/6 becomes HardSigmoid(x; 1/6, 1/2) * x,
//      the form ORT fuses into the convolution before it;
//   2. into the producer: a chain of scalar Mul/Add/Sub/Div after a Conv
//      that only it reads is folded into the Conv's weights and bias;
//   3. into the consumer: such a chain read only by an unpadded Conv is
//      folded into that Conv (W*s, and b times the sum of each output's
//      weights added to its bias; with padding this would be wrong at the
//      borders, where the chain's zero-padded output is not b);
//   4. what is left of those read by Convs becomes one BatchNormalization
//      (scale s, bias b, mean 0, variance 1, epsilon 0): one pass, in the
//      blocked layout.
//
// Each is exact in real arithmetic; in float32 the outputs move by rounding
// (tests/onnx/graph_passes_test.mjs holds them to ORT on the graph as
// exported). A graph with external data or subgraphs is left as it is.
import { FLOAT, floatAttr, node, readModel, tensor, writeModel } from './onnx_proto.mjs';

// bytes of an ONNX model -> {bytes: the rewritten model, or null where no
// pass applied, counts: what each pass did}.
export function optimizeGraph(bytes) {
  const model = readModel(bytes);
  const g = model.graph;
  const counts = { hardswish: 0, intoProducer: 0, intoConsumer: 0, batchNorm: 0 };
  const tensors = [...g.initializers.values(), ...g.nodes.flatMap((n) => [...n.attrs.values()].map((a) => a.t).filter(Boolean))];
  if (tensors.some((t) => t.external) || g.nodes.some((n) => [...n.attrs.values()].some((a) => a.subgraph))) {
    return { bytes: null, counts };
  }
  const p = new Passes(g, model.opset);
  counts.hardswish = p.hardswish();
  counts.intoProducer = p.intoProducers();
  counts.intoConsumer = p.intoConsumers();
  if (model.opset >= 9) counts.batchNorm = p.asBatchNorms();
  if (Object.values(counts).every((c) => c === 0)) return { bytes: null, counts };
  p.dropDead();
  return { bytes: writeModel(model), counts };
}

const AFFINE = new Set(['Mul', 'Add', 'Sub', 'Div']);

class Passes {
  constructor(graph, opset) {
    this.g = graph;
    this.opset = opset;
    this.fresh = 0;
    this.index();
  }

  // Who makes and who reads each value; which values are constants.
  index() {
    const g = this.g;
    this.producer = new Map();
    this.readers = new Map();
    this.consts = new Map();
    const inputs = new Set(g.inputs);
    for (const [name, t] of g.initializers) if (!inputs.has(name) && t.data) this.consts.set(name, t);
    for (const t of g.added) this.consts.set(t.name, t);
    for (const n of g.nodes) {
      for (const o of n.output) this.producer.set(o, n);
      for (const i of n.input) if (i) this.readers.set(i, [...(this.readers.get(i) ?? []), n]);
      const value = n.opType === 'Constant' && n.domain === '' ? n.attrs.get('value')?.t : null;
      if (value?.data) this.consts.set(n.output[0], value);
    }
    for (const o of g.outputs) this.readers.set(o, [...(this.readers.get(o) ?? []), null]);  // null: the graph's caller
  }

  scalar(name) {
    const t = this.consts.get(name);
    return t && t.data.length === 1 ? t.data[0] : undefined;
  }

  // The one node that reads `value`, or null.
  onlyReader(value) {
    const r = this.readers.get(value) ?? [];
    return r.length === 1 ? r[0] : null;
  }

  // Whether n is one step of a chain (a scalar op on a value).
  isStep(n) {
    return n.input.some((i) => !this.consts.has(i) && this.affineStep(n, i));
  }

  // y = s*x + b for one scalar op reading x, or null.
  affineStep(n, x) {
    if (!AFFINE.has(n.opType) || n.domain !== '' || n.input.length !== 2) return null;
    const k = n.input[0] === x ? 1 : 0;
    if (n.input[1 - k] !== x) return null;
    const c = this.scalar(n.input[k]);
    if (c === undefined) return null;
    switch (n.opType) {
      case 'Mul': return { s: c, b: 0 };
      case 'Add': return { s: 1, b: c };
      case 'Sub': return k === 1 ? { s: 1, b: -c } : null;
      default: return k === 1 && c !== 0 ? { s: 1 / c, b: 0 } : null;  // Div
    }
  }

  // The chain of scalar ops from `x` on, each the only reader of the value
  // before it: {ops, s, b, out} (y = s*x + b, in float64), or null.
  affineChain(x) {
    const ops = [];
    let s = 1, b = 0, v = x;
    for (let n = this.onlyReader(v); n; n = this.onlyReader(v)) {
      const step = this.affineStep(n, v);
      if (!step) break;
      s *= step.s;
      b = b * step.s + step.b;
      ops.push(n);
      v = n.output[0];
    }
    return ops.length ? { ops, s, b, out: v } : null;
  }

  // A plain Conv whose weight (and bias) are float constants: {W, B}.
  convWeights(n) {
    if (n?.opType !== 'Conv' || n.domain !== '') return null;
    const W = this.consts.get(n.input[1]);
    const B = n.input[2] ? this.consts.get(n.input[2]) : null;
    if (!W || W.dataType !== FLOAT || W.dims.length < 3 || (n.input[2] && !B)) return null;
    return { W, B };
  }

  padded(conv) {
    const autoPad = conv.attrs.get('auto_pad')?.s ?? 'NOTSET';
    if (autoPad !== 'NOTSET' && autoPad !== 'VALID') return true;
    return (conv.attrs.get('pads')?.ints ?? []).some((p) => p !== 0n);
  }

  addTensor(base, dims, data) {
    const name = `${base}/shoal_${this.fresh++}`;
    const t = tensor(name, dims, data);
    this.g.added.push(t);
    this.consts.set(name, t);
    return name;
  }

  // Nodes out, nodes in at the place of `at` (the graph stays in
  // topological order: what goes in reads nothing made after `at`).
  replace(remove, at, insert = []) {
    const gone = new Set(remove);
    const nodes = [];
    for (const n of this.g.nodes) {
      if (n === at) nodes.push(...insert);
      if (!gone.has(n)) nodes.push(n);
    }
    this.g.nodes = nodes;
    this.index();
  }

  hardswish() {
    let done = 0;
    for (const add of [...this.g.nodes]) {
      if (!this.g.nodes.includes(add) || add.opType !== 'Add' || add.domain !== '' || add.input.length !== 2) continue;
      const k = add.input.findIndex((i) => this.scalar(i) === 3);
      if (k < 0) continue;
      const x = add.input[1 - k];
      const clip = this.onlyReader(add.output[0]);
      if (!clip || clip.opType !== 'Clip' || !this.clipsTo(clip, 0, 6)) continue;
      const mul = this.onlyReader(clip.output[0]);
      if (!mul || mul.opType !== 'Mul' || new Set(mul.input).size !== 2 || !mul.input.includes(x)) continue;
      const div = this.onlyReader(mul.output[0]);
      const step = div && this.affineStep(div, mul.output[0]);
      if (!step || step.b !== 0 || Math.abs(step.s - 1 / 6) > 1e-7) continue;
      const sig = node('HardSigmoid', [x], [`${div.output[0]}/shoal_hard_sigmoid`], [floatAttr('alpha', 1 / 6), floatAttr('beta', 0.5)]);
      this.replace([add, clip, mul, div], div, [sig, node('Mul', [x, sig.output[0]], [div.output[0]])]);
      done++;
    }
    return done;
  }

  clipsTo(clip, lo, hi) {
    if (clip.domain !== '') return false;
    if (this.opset < 11) return clip.attrs.get('min')?.f === lo && clip.attrs.get('max')?.f === hi;
    return clip.input.length === 3 && this.scalar(clip.input[1]) === lo && this.scalar(clip.input[2]) === hi;
  }

  intoProducers() {
    let done = 0;
    for (const conv of [...this.g.nodes]) {
      const w = this.convWeights(conv);
      const chain = w && this.affineChain(conv.output[0]);
      if (!chain) continue;
      const { W, B } = w;
      const M = W.dims[0];
      conv.input[1] = this.addTensor(conv.input[1], W.dims, W.data.map((v) => v * chain.s));
      const bias = Array.from({ length: M }, (_, o) => (B ? B.data[o] : 0) * chain.s + chain.b);
      conv.input[2] = this.addTensor(conv.input[2] || `${conv.output[0]}/bias`, [M], bias);
      conv.output[0] = chain.out;
      conv.raw = null;
      this.replace(chain.ops, conv);
      done++;
    }
    return done;
  }

  // Every chain, each taken whole from its first op (one whose value in is
  // not a step's that only it reads).
  chains() {
    const out = [];
    for (const n of this.g.nodes) {
      for (const x of n.input) {
        if (!x || this.consts.has(x) || !this.affineStep(n, x)) continue;
        const before = this.producer.get(x);
        if (before && this.isStep(before) && this.onlyReader(x) === n) continue;
        const chain = this.affineChain(x);
        if (chain && chain.ops[0] === n) out.push({ x, ...chain });
      }
    }
    return out;
  }

  intoConsumers() {
    let done = 0;
    for (const chain of this.chains()) {
      const conv = this.onlyReader(chain.out);
      const w = this.convWeights(conv);
      if (!w || conv.input[0] !== chain.out || this.padded(conv)) continue;
      const { W, B } = w;
      const M = W.dims[0], per = W.data.length / M;
      const bias = Array.from({ length: M }, (_, o) => {
        let sum = 0;
        for (let k = 0; k < per; k++) sum += W.data[o * per + k];
        return (B ? B.data[o] : 0) + chain.b * sum;
      });
      conv.input[0] = chain.x;
      conv.input[1] = this.addTensor(conv.input[1], W.dims, W.data.map((v) => v * chain.s));
      conv.input[2] = this.addTensor(conv.input[2] || `${conv.output[0]}/bias`, [M], bias);
      conv.raw = null;
      this.replace(chain.ops, conv);
      done++;
    }
    return done;
  }

  asBatchNorms() {
    let done = 0;
    for (const chain of this.chains()) {
      // Its channels, from the Convs that read it.
      const readers = this.readers.get(chain.out) ?? [];
      const C = new Set(readers.map((r) => {
        const w = this.convWeights(r);
        return w && r.input[0] === chain.out ? w.W.dims[1] * Number(r.attrs.get('group')?.i ?? 1n) : 0;
      }));
      if (C.size !== 1 || C.has(0)) continue;
      const [c] = C;
      const name = chain.out;
      const inputs = [
        this.addTensor(name, [c], new Array(c).fill(chain.s)), this.addTensor(name, [c], new Array(c).fill(chain.b)),
        this.addTensor(name, [c], new Array(c).fill(0)), this.addTensor(name, [c], new Array(c).fill(1)),
      ];
      const last = chain.ops[chain.ops.length - 1];
      this.replace(chain.ops, last, [node('BatchNormalization', [chain.x, ...inputs], [name], [floatAttr('epsilon', 0)])]);
      done++;
    }
    return done;
  }

  // Constants and initializers nothing reads any more.
  dropDead() {
    const read = (name) => (this.readers.get(name) ?? []).length > 0;
    this.g.nodes = this.g.nodes.filter((n) => n.opType !== 'Constant' || n.output.some(read));
    const inputs = new Set(this.g.inputs);
    for (const name of this.g.initializers.keys()) if (!read(name) && !inputs.has(name)) this.g.dropped.add(name);
    this.g.added = this.g.added.filter((t) => read(t.name));
  }
}
