// Shoal's ONNX Runtime sidecar: a tensor-runtime process serving the runtime
// protocol (docs/runtime-protocol.md, version 1) with the "tokens" input
// mode: Shoal tokenizes and sends token ids; this process pads them into one
// int64 batch, runs the graph with onnxruntime-node, pools and normalizes.
// It also loads bare graphs ("graphs": a pipeline's stages, such as OCR's
// detector) and runs them on the float32 tensors Shoal sends (op "run").
//
//   node src/runtime/onnx/runtime.mjs                 serve fd $SHOAL_RUNTIME_FD (3)
//   node src/runtime/onnx/runtime.mjs --listen PATH   serve each connection on a Unix socket
//
// Concurrency: the main thread is one event loop that reads frames, answers
// hello/health/memory/unload/loras at once and writes each reply as a single
// whole frame. onnxruntime-node's session.run (and session creation) is only
// nominally async: it runs synchronously on the calling thread, so each
// loaded model lives in a worker thread of its own (this same file, below).
// A model's batches run one after another in its worker (ORT's intra-op
// threads, `threads` of the load, parallelize each); different models' batches
// run at the same time; the main loop is never blocked, so health is answered
// even while batches run. Models are process-wide (as in `shoal runtime-host`).
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Worker, isMainThread, parentPort } from 'node:worker_threads';
import { decode, encode } from '@msgpack/msgpack';
import { optimizeGraph } from './graph_passes.mjs';

const require = createRequire(import.meta.url);
const MAX_FRAME = 256 * 1024 * 1024;
const FEEDS = ['input_ids', 'attention_mask', 'token_type_ids'];
const OPTIONS = ['file', 'pooling'];
const NO_LORA = 'runs no LoRA adapters';

const isMap = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v);
const fail = (code, message) => ({ error: { code, message } });
const coded = (code, message) => Object.assign(new Error(message), { shoal: code });

// ---------------------------------------------------------------- model worker

// One loaded model: its InferenceSession, and a queue so that messages
// (load, run..., close) are handled strictly in order.
function modelWorker() {
  const ort = require('onnxruntime-node');
  ort.env.logLevel = 'error';
  let m = null;
  let queue = Promise.resolve();
  parentPort.on('message', (msg) => {
    queue = queue.then(async () => {
      if (msg.kind === 'close') {
        await m?.session.release();
        parentPort.close();
        return;
      }
      try {
        const [reply, transfer] = msg.kind === 'load' ? [await load(msg), []]
          : msg.kind === 'graph' ? await runGraph(msg) : await run(msg);
        parentPort.postMessage({ seq: msg.seq, ...reply }, transfer);
      } catch (e) {
        const code = e.shoal ?? (msg.kind === 'load' ? 'MODEL_LOAD_FAILED' : 'INFERENCE_ERROR');
        let message = String(e?.message ?? e);
        if (msg.kind === 'load' && !message.includes(msg.file)) message = `${msg.file}: ${message}`;
        parentPort.postMessage({ seq: msg.seq, ...fail(code, message) });
      }
    });
  });

  async function load({ file, threads, task, pooling, padId, graph }) {
    // A graph goes through Shoal's passes first (graph_passes.mjs); one they
    // cannot read goes to ORT as it is, for ORT to judge.
    let passes = null;
    let source = file;
    if (graph) {
      try {
        const r = optimizeGraph(new Uint8Array(fs.readFileSync(file)));
        passes = r.counts;
        if (r.bytes) source = r.bytes;
      } catch (e) {
        passes = { unread: String(e?.message ?? e) };
      }
    }
    const session = await ort.InferenceSession.create(source, {
      intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
      executionMode: 'sequential', logSeverityLevel: 3,
    });
    if (graph) {
      const bad = session.inputMetadata.find((meta) => meta.isTensor && meta.type !== 'float32');
      if (bad) {
        await session.release();
        throw coded('INVALID_INPUT', `${file}: the graph's input '${bad.name}' is ${bad.type}; a graph takes float32`);
      }
      m = { session, graph: true };
      return { ok: {}, passes };
    }
    const check = () => {
      for (const meta of session.inputMetadata) {
        if (!FEEDS.includes(meta.name)) {
          throw coded('INVALID_INPUT', `${file}: the graph's input '${meta.name}' is not one Shoal feeds (${FEEDS.join(', ')})`);
        }
        if (meta.isTensor && meta.type !== 'int64') {
          throw coded('INVALID_INPUT', `${file}: the graph's input '${meta.name}' is ${meta.type}; Shoal feeds int64`);
        }
      }
      if (!session.inputNames.includes('input_ids')) {
        throw coded('INVALID_INPUT', `${file}: the graph has no input 'input_ids'`);
      }
      const outs = session.outputNames;
      if (outs.length === 0) throw coded('INVALID_INPUT', `${file}: the graph has no outputs`);
      if (task === 'score') return outs.includes('logits') ? 'logits' : outs[0];
      if (outs.includes('sentence_embedding')) return 'sentence_embedding';
      if (pooling.error) throw coded('INVALID_INPUT', pooling.error);
      return outs.includes('last_hidden_state') ? 'last_hidden_state' : outs[0];
    };
    try {
      m = { session, task, padId: BigInt(padId), pooling: pooling.mode, output: check() };
    } catch (e) {
      await session.release();
      throw e;
    }
    return { ok: {} };
  }

  // items: [{ids, types (score; null: zeros), normalize}] -> one LE float32
  // vector per item.
  async function run({ items }) {
    const B = items.length;
    const T = Math.max(...items.map((it) => it.ids.length));
    const ids = new BigInt64Array(B * T).fill(m.padId);
    const mask = new BigInt64Array(B * T);
    const types = new BigInt64Array(B * T);
    items.forEach((it, b) => {
      it.ids.forEach((id, t) => {
        ids[b * T + t] = BigInt(id);
        mask[b * T + t] = 1n;
        if (it.types) types[b * T + t] = BigInt(it.types[t]);
      });
    });
    const arrays = { input_ids: ids, attention_mask: mask, token_type_ids: types };
    const feeds = {};
    for (const name of m.session.inputNames) feeds[name] = new ort.Tensor('int64', arrays[name], [B, T]);
    const out = (await m.session.run(feeds, [m.output]))[m.output];
    const data = floats(out);
    const dims = out.dims;
    if (dims[0] !== B) throw new Error(`output '${m.output}' has shape [${dims}] for a batch of ${B}`);
    const width = dims.length === 1 ? 1 : dims[dims.length - 1];
    const vectors = items.map((it, b) => {
      if (dims.length === 3 && m.task === 'encode') return pool(data, b, T, width, it.ids.length, it.normalize);
      if (dims.length > 2) throw new Error(`output '${m.output}' has shape [${dims}]; expected [batch, ${m.task === 'score' ? 'labels' : 'hidden'}]`);
      const v = Array.from(data.subarray(b * width, (b + 1) * width));
      return it.normalize ? normalize(v) : v;
    });
    const bins = vectors.map(le32);
    return [{ ok: { items: bins } }, bins.map((x) => x.buffer)];
  }

  // A bare graph's run: float32 tensors in, every output out (as float32),
  // or with top1 each output's last axis reduced to (max, index).
  async function runGraph({ inputs, top1 }) {
    const feeds = {};
    for (const t of inputs) feeds[t.name] = new ort.Tensor('float32', t.data, t.shape);
    const out = await m.session.run(feeds);
    const outputs = m.session.outputNames.map((name) => {
      const dims = out[name].dims.map(Number);
      const [shape, data] = top1 ? top1Of(floats(out[name]), dims) : [dims, new Float32Array(floats(out[name]))];
      return { name, shape, data: new Uint8Array(data.buffer) };
    });
    return [{ ok: { outputs } }, outputs.map((t) => t.data.buffer)];
  }

  // Over the item's real tokens: row 0 (cls) or the mean of its rows.
  function pool(data, b, T, H, n, norm) {
    const v = new Array(H).fill(0);
    const rows = m.pooling === 'mean' ? n : 1;
    for (let t = 0; t < rows; t++) {
      const base = (b * T + t) * H;
      for (let h = 0; h < H; h++) v[h] += data[base + h];
    }
    for (let h = 0; h < H; h++) v[h] /= rows;
    return norm ? normalize(v) : v;
  }
}

function normalize(v) {
  const norm = Math.max(Math.sqrt(v.reduce((s, x) => s + x * x, 0)), 1e-12);
  return v.map((x) => x / norm);
}

function le32(values) {
  const bytes = new Uint8Array(values.length * 4);
  const view = new DataView(bytes.buffer);
  values.forEach((x, i) => view.setFloat32(i * 4, x, true));
  return bytes;
}

// Along the last axis of `dims`: each row's largest value and its index.
function top1Of(values, dims) {
  const C = dims.length ? dims[dims.length - 1] : 1;
  const rows = C ? values.length / C : 0;
  const pairs = new Float32Array(rows * 2);
  for (let r = 0; r < rows; r++) {
    let best = 0, max = values[r * C];
    for (let c = 1; c < C; c++) {
      if (values[r * C + c] > max) { max = values[r * C + c]; best = c; }
    }
    pairs[2 * r] = max;
    pairs[2 * r + 1] = best;
  }
  return [[...dims.slice(0, -1), 2], pairs];
}

// An output tensor's values as numbers (float32/float64 as they are, float16
// decoded from its bits).
function floats(tensor) {
  if (tensor.type === 'float32' || tensor.type === 'float64') return tensor.data;
  if (tensor.type !== 'float16') throw new Error(`the output is ${tensor.type}, not a float tensor`);
  if (!(tensor.data instanceof Uint16Array)) return Float32Array.from(tensor.data);
  return Float32Array.from(tensor.data, (h) => {
    const e = (h >> 10) & 0x1f, f = h & 0x3ff, s = h & 0x8000 ? -1 : 1;
    if (e === 0) return s * f * 2 ** -24;
    if (e === 31) return f ? NaN : s * Infinity;
    return s * (1 + f / 1024) * 2 ** (e - 15);
  });
}

// ---------------------------------------------------------------- main thread

// The main thread's handle on one model worker: call() posts a message and
// resolves with the worker's reply to it.
class ModelWorker {
  constructor() {
    this.worker = new Worker(new URL(import.meta.url));
    this.waiting = new Map();
    this.seq = 0;
    this.broken = null;
    this.worker.on('message', (r) => {
      this.waiting.get(r.seq)?.(r);
      this.waiting.delete(r.seq);
    });
    const lost = (why) => {
      this.broken ??= why;
      for (const resolve of this.waiting.values()) resolve(fail('INFERENCE_ERROR', this.broken));
      this.waiting.clear();
    };
    this.worker.on('error', (e) => lost(`the model's worker failed: ${e.message}`));
    this.worker.on('exit', () => lost("the model's worker has stopped"));
  }
  call(msg) {
    if (this.broken) return Promise.resolve(fail('INFERENCE_ERROR', this.broken));
    const seq = ++this.seq;
    return new Promise((resolve) => {
      this.waiting.set(seq, resolve);
      this.worker.postMessage({ ...msg, seq });
    });
  }
  close() { this.broken ??= 'unloaded'; this.worker.postMessage({ kind: 'close' }); }
}

const models = new Map(); // handle -> {id, task, bytes, worker, maxTokens, vocab, typeVocab}
let ortVersion = '';

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    if (e.code === 'ENOENT') return null;
    throw coded('MODEL_LOAD_FAILED', `${file}: ${e.message}`);
  }
}

// The pooling sentence-transformers declares for the model: {mode} or {error}.
function declaredPooling(dir) {
  const modules = readJson(path.join(dir, 'modules.json'));
  const entry = Array.isArray(modules) && modules.find((m) => m?.type === 'sentence_transformers.models.Pooling');
  const cfg = entry && readJson(path.join(dir, entry.path ?? '1_Pooling', 'config.json'));
  if (!cfg) return { mode: 'cls' };
  const on = Object.keys(cfg).filter((k) => k.startsWith('pooling_mode_') && cfg[k] === true);
  if (on.length === 1 && on[0] === 'pooling_mode_cls_token') return { mode: 'cls' };
  if (on.length === 1 && on[0] === 'pooling_mode_mean_tokens') return { mode: 'mean' };
  if (on.length === 0) return { mode: 'cls' };
  return { error: `the model's pooling (${on.join(', ')} in ${entry.path ?? '1_Pooling'}/config.json) is not one this runtime does; set the onnx option pooling (cls or mean)` };
}

function modelFile(dir, file) {
  if (file !== undefined) return path.resolve(dir, file);
  const candidates = ['model.onnx', path.join('onnx', 'model.onnx')].map((f) => path.join(dir, f));
  return candidates.find((f) => fs.existsSync(f)) ?? candidates[0];
}

// What the graph passes did, for the load's log line.
function passesSaid(p) {
  if (!p) return '';
  if (p.unread) return ` (graph passes: not run, the graph did not read: ${p.unread})`;
  return ` (graph passes: ${p.hardswish} hardswish, ${p.intoProducer} affines into their convolution, ` +
    `${p.intoConsumer} into the next, ${p.batchNorm} as batch norms)`;
}

function fileSize(file) {
  try { return fs.statSync(file).size; } catch { return 0; }
}

async function load(q) {
  const c = q.config;
  if (typeof q.model !== 'string' || q.model === '') return fail('INVALID_INPUT', 'load: no model handle');
  if (!isMap(c) || typeof c.path !== 'string' || c.path === '') return fail('INVALID_INPUT', 'load: the config has no path');
  const graph = c.graph === true;
  if (!graph && c.task !== 'encode' && c.task !== 'score') {
    return fail('INVALID_INPUT', `runtime onnx does not run task '${c.task}' (tasks: encode, score)`);
  }
  const options = c.options ?? {};
  if (!isMap(options)) return fail('INVALID_INPUT', 'load: options must be a map');
  for (const key of Object.keys(options)) {
    if (!OPTIONS.includes(key)) return fail('INVALID_INPUT', `unknown onnx option '${key}' (known: ${OPTIONS.join(', ')})`);
  }
  if (options.file !== undefined && (typeof options.file !== 'string' || options.file === '')) {
    return fail('INVALID_INPUT', "onnx option 'file' must be a path relative to the model directory");
  }
  if (options.pooling !== undefined) {
    if (options.pooling !== 'cls' && options.pooling !== 'mean') {
      return fail('INVALID_INPUT', `onnx option 'pooling' is '${options.pooling}'; it takes cls or mean`);
    }
    if (c.task !== 'encode' || graph) return fail('INVALID_INPUT', "onnx option 'pooling' is for encode models only");
  }
  const threads = q.threads ?? 0;
  if (!Number.isInteger(threads) || threads < 0) return fail('INVALID_INPUT', `load: threads ${threads} is not a count`);

  const started = process.hrtime.bigint();
  const dir = path.resolve(c.path);
  let config, pooling;
  try {
    config = readJson(path.join(dir, 'config.json')) ?? {};
    pooling = options.pooling ? { mode: options.pooling } : c.task === 'encode' ? declaredPooling(dir) : { mode: 'cls' };
  } catch (e) {
    return fail(e.shoal ?? 'MODEL_LOAD_FAILED', e.message);
  }
  const file = modelFile(dir, options.file);
  let stat;
  try {
    stat = fs.statSync(file);
  } catch (e) {
    if (e.code !== 'ENOENT') return fail('MODEL_LOAD_FAILED', `${file}: ${e.message}`);
    if (options.file !== undefined) return fail('MODEL_LOAD_FAILED', `${file}: no such file`);
    return fail('MODEL_LOAD_FAILED', `${dir}: no model.onnx or onnx/model.onnx (the onnx option file names another)`);
  }
  if (!stat.isFile()) return fail('MODEL_LOAD_FAILED', `${file}: not a file`);

  const padId = Number.isInteger(config.pad_token_id) ? config.pad_token_id : 0;
  const worker = new ModelWorker();
  const r = await worker.call({ kind: 'load', file, threads, task: c.task, pooling, padId, graph });
  if (r.error) {
    worker.worker.terminate();
    return r.error.code === 'INFERENCE_ERROR' ? fail('MODEL_LOAD_FAILED', `${file}: ${r.error.message}`) : r;
  }
  let maxTokens = Number.isInteger(config.max_position_embeddings) ? config.max_position_embeddings : 0;
  if (maxTokens > 0 && ['roberta', 'xlm-roberta', 'camembert'].includes(config.model_type)) {
    maxTokens -= (Number.isInteger(config.pad_token_id) ? config.pad_token_id : 1) + 1;
  }
  maxTokens = Math.max(maxTokens, 0);
  const bytes = stat.size + fileSize(`${file}.data`) + fileSize(`${file}_data`);
  const positive = (v) => (Number.isInteger(v) && v > 0 ? v : 0);
  const old = models.get(q.model);
  models.set(q.model, {
    id: c.id ?? q.model, task: graph ? 'run' : c.task, bytes, worker, maxTokens,
    vocab: positive(config.vocab_size), typeVocab: positive(config.type_vocab_size),
  });
  old?.worker.close();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  process.stderr.write(`onnx: loaded ${c.id ?? q.model} from ${file} in ${seconds.toFixed(2)} s${passesSaid(r.passes)}\n`);
  return { ok: graph ? { memory_bytes: bytes } : { memory_bytes: bytes, max_tokens: maxTokens } };
}

// A bare graph's run: [{name, shape, data: bin of LE float32}] in and out.
async function runGraph(q) {
  const m = models.get(q.model);
  if (!m) return fail('MODEL_NOT_FOUND', `no model '${q.model}' is loaded`);
  if (m.task !== 'run') return fail('INVALID_INPUT', `model '${q.model}' is not a graph; it serves ${m.task}`);
  if (!Array.isArray(q.inputs)) return fail('INVALID_INPUT', 'run: inputs must be a list');
  if (q.top1 !== undefined && typeof q.top1 !== 'boolean') return fail('INVALID_INPUT', 'run: top1 must be true or false');
  const inputs = [];
  for (const t of q.inputs) {
    if (!isMap(t) || typeof t.name !== 'string' || !Array.isArray(t.shape) || !(t.data instanceof Uint8Array)) {
      return fail('INVALID_INPUT', 'run: an input is not {name, shape, data}');
    }
    if (!t.shape.every((d) => Number.isInteger(d) && d >= 0)) return fail('INVALID_INPUT', `run: ${t.name}: a bad shape`);
    const count = t.shape.reduce((a, d) => a * d, 1);
    if (t.data.length !== count * 4) {
      return fail('INVALID_INPUT', `run: ${t.name}: ${t.data.length} bytes for ${count} float32 values`);
    }
    // A copy: aligned, and transferable to the model's worker.
    const data = new Float32Array(count);
    new Uint8Array(data.buffer).set(t.data);
    inputs.push({ name: t.name, shape: t.shape, data });
  }
  const r = await m.worker.call({ kind: 'graph', inputs, top1: q.top1 === true });
  if (r.error) return fail('INFERENCE_ERROR', r.error.message);
  return r;
}

// One item's input for the worker, or {error} when it fails alone.
function readItem(m, op, it) {
  if (!isMap(it)) return fail('INVALID_INPUT', 'an item is not a map');
  if (typeof it.lora === 'string' && it.lora !== '') {
    return fail('MODEL_NOT_FOUND', `model '${m.id}' ${NO_LORA} (runtime onnx)`);
  }
  const ids = it.ids;
  if (!Array.isArray(ids) || ids.length === 0) return fail('INVALID_INPUT', 'the input has no token ids');
  const bad = (v, limit) => !Number.isInteger(v) || v < 0 || (limit > 0 && v >= limit);
  const badId = ids.find((id) => bad(id, m.vocab));
  if (badId !== undefined) return fail('INVALID_INPUT', `token id ${badId} is not in the model's vocabulary of ${m.vocab}`);
  if (m.maxTokens > 0 && ids.length > m.maxTokens) {
    return fail('INVALID_INPUT', `input has ${ids.length} tokens, over the model's limit of ${m.maxTokens}`);
  }
  let types = null;
  if (op === 'score' && it.type_ids != null) {
    types = it.type_ids;
    if (!Array.isArray(types) || types.length !== ids.length) {
      return fail('INVALID_INPUT', `type_ids has ${types?.length ?? 0} values for ${ids.length} token ids`);
    }
    const badType = types.find((t) => bad(t, m.typeVocab));
    if (badType !== undefined) return fail('INVALID_INPUT', `token type id ${badType} is not one the model has`);
  }
  return { ids, types, normalize: op === 'encode' && it.normalize === true };
}

async function batch(q) {
  const m = models.get(q.model);
  if (!m) return fail('MODEL_NOT_FOUND', `no model '${q.model}' is loaded`);
  if (m.task !== q.op) return fail('INVALID_INPUT', `model '${q.model}' serves ${m.task}, not ${q.op}`);
  if (!Array.isArray(q.items)) return fail('INVALID_INPUT', `${q.op}: items must be a list`);
  const results = q.items.map((it) => readItem(m, q.op, it));
  const run = results.filter((r) => !r.error);
  if (run.length > 0) {
    const r = await m.worker.call({ kind: 'run', items: run });
    if (r.error) return fail('INFERENCE_ERROR', r.error.message);
    let next = 0;
    const key = q.op === 'encode' ? 'dense' : 'logits';
    results.forEach((res, i) => { if (!res.error) results[i] = { [key]: r.ok.items[next++] }; });
  }
  return { ok: { items: results } };
}

function residentBytes() {
  try {
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    if (kb) return Number(kb[1]) * 1024;
  } catch { /* not Linux */ }
  return process.memoryUsage().rss;
}

// Serves one connection; onStop runs once `stop` has been answered.
function serve(socket, onStop) {
  let greeted = false;
  let stopping = false;
  const running = new Set();
  const send = (msg) => {
    if (socket.destroyed) return;
    const body = encode(msg, { ignoreUndefined: true });
    const frame = Buffer.allocUnsafe(4 + body.length);
    frame.writeUInt32BE(body.length, 0);
    frame.set(body, 4);
    socket.write(frame);
  };
  const reply = (id, r) => send(r.error ? { id, error: r.error } : { id, ok: r.ok ?? {} });
  const hangUp = (why) => {
    if (why) process.stderr.write(`onnx: protocol error: ${why}; closing the connection\n`);
    socket.end();
  };
  const track = (id, work) => {
    const p = work.catch((e) => fail('INTERNAL', String(e?.stack ?? e))).then((r) => reply(id, r));
    running.add(p);
    p.finally(() => running.delete(p));
  };

  function handle(q) {
    const { id, op } = q;
    if (op === 'hello') {
      if (!Array.isArray(q.versions) || !q.versions.includes(1)) {
        reply(id, fail('INVALID_INPUT', 'this runtime speaks protocol versions [1]'));
        return hangUp();
      }
      greeted = true;
      return reply(id, { ok: { protocol: 1, runtime: 'onnx', version: `onnxruntime-node ${ortVersion}`,
        tasks: ['encode', 'score'], lora: false, memory_bytes: 0, input: 'tokens', graphs: true } });
    }
    if (!greeted) {
      reply(id, fail('INVALID_INPUT', 'say hello first'));
      return hangUp();
    }
    if (stopping) return reply(id, fail('NO_CAPACITY', 'the runtime is stopping'));
    switch (op) {
      case 'health': return reply(id, { ok: { models: models.size } });
      case 'memory': {
        const bytes = Object.fromEntries([...models].map(([h, m]) => [h, m.bytes]));
        return reply(id, { ok: { rss_bytes: residentBytes(), models: bytes } });
      }
      case 'stop':
        stopping = true;
        return Promise.allSettled([...running]).then(() => {
          reply(id, { ok: {} });
          socket.end(onStop);
        });
      case 'load': return track(id, load(q));
      case 'encode': case 'score': return track(id, batch(q));
      case 'run': return track(id, runGraph(q));
      case 'unload': {
        const m = models.get(q.model);
        if (!m) return reply(id, fail('MODEL_NOT_FOUND', `no model '${q.model}' is loaded`));
        models.delete(q.model);
        m.worker.close(); // after the batches already sent to it
        return reply(id, { ok: {} });
      }
      case 'loras': {
        const m = models.get(q.model);
        if (!m) return reply(id, fail('MODEL_NOT_FOUND', `no model '${q.model}' is loaded`));
        if (!Array.isArray(q.loras)) return reply(id, fail('INVALID_INPUT', 'loras: loras must be a list'));
        if (q.loras.length > 0) return reply(id, fail('INVALID_INPUT', `model '${m.id}' ${NO_LORA} (runtime onnx)`));
        return reply(id, { ok: {} });
      }
      case 'check_lora': return reply(id, fail('INVALID_INPUT', `runtime onnx ${NO_LORA}`));
      case 'tokenize': return reply(id, fail('INVALID_INPUT', 'runtime onnx takes tokens: Shoal tokenizes'));
      default:
        if (typeof op !== 'string') return reply(id, fail('INVALID_INPUT', 'the request has no op'));
        return reply(id, fail('INVALID_INPUT', `unknown op '${op}'`));
    }
  }

  // Frames: chunks are kept until a whole frame is there, then joined once.
  const chunks = [];
  let buffered = 0;
  let need = -1; // the body length of the frame being read; -1: reading its header
  const take = (n) => {
    let out;
    if (n === 0) return Buffer.alloc(0);
    if (chunks[0].length >= n) { // the usual case: no copy
      out = chunks[0].subarray(0, n);
      if (chunks[0].length > n) chunks[0] = chunks[0].subarray(n);
      else chunks.shift();
    } else {
      const all = Buffer.concat(chunks.splice(0), buffered);
      out = all.subarray(0, n);
      if (all.length > n) chunks.push(all.subarray(n));
    }
    buffered -= n;
    return out;
  };
  socket.on('data', (chunk) => {
    if (socket.writableEnded) return; // hanging up: nothing more is read
    chunks.push(chunk);
    buffered += chunk.length;
    while (!socket.writableEnded) {
      if (need < 0) {
        if (buffered < 4) return;
        need = take(4).readUInt32BE(0);
        if (need > MAX_FRAME) return hangUp(`a frame of ${need} bytes, over the limit of ${MAX_FRAME}`);
      }
      if (buffered < need) return;
      const body = take(need);
      need = -1;
      let q;
      try {
        q = decode(body);
      } catch (e) {
        return hangUp(`a frame that is not MessagePack (${e.message})`);
      }
      if (!isMap(q) || !Number.isInteger(q.id) || q.id < 0) return hangUp('a request that is not a map with an id');
      handle(q);
    }
  });
  socket.on('error', (e) => {
    process.stderr.write(`onnx: connection: ${e.message}\n`);
    socket.destroy();
  });
}

function main(args) {
  try {
    const entry = require.resolve('onnxruntime-node');
    ortVersion = JSON.parse(fs.readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')).version;
  } catch (e) {
    process.stderr.write(`onnx: onnxruntime-node is not installed (scripts/setup installs it): ${e.message}\n`);
    process.exit(1);
  }
  if (args.length === 2 && args[0] === '--listen') {
    const where = args[1];
    try { if (fs.statSync(where).isSocket()) fs.unlinkSync(where); } catch { /* none there */ }
    const server = net.createServer((socket) => serve(socket, () => {
      server.close();
      try { fs.unlinkSync(where); } catch { /* gone */ }
      process.exit(0);
    }));
    server.on('error', (e) => {
      process.stderr.write(`onnx: listening on ${where}: ${e.message}\n`);
      process.exit(1);
    });
    server.listen(where);
    return;
  }
  if (args.length !== 0) {
    process.stderr.write('usage: node src/runtime/onnx/runtime.mjs [--listen PATH]\n' +
      '  (without --listen: serve the socket on fd $SHOAL_RUNTIME_FD, 3 by default)\n');
    process.exit(2);
  }
  const fd = Number(process.env.SHOAL_RUNTIME_FD ?? 3);
  let socket;
  try {
    socket = new net.Socket({ fd, readable: true, writable: true });
  } catch (e) {
    process.stderr.write(`onnx: no socket on fd ${fd}: ${e.message}\n`);
    process.exit(2);
  }
  socket.on('close', () => process.exit(0));
  serve(socket, () => process.exit(0));
}

if (isMainThread) main(process.argv.slice(2));
else modelWorker();
