// ONNX Runtime's session creation (onnxruntime-node, CPU EP, graph optimization "all") and the
// first run after it, for bench/run_compile_bench.sh: one JSON line per model.
//
//   node ort_session.js --model FILE.onnx --inputs DIR [--threads N]
//
// DIR holds the model's reference inputs as in.<name>.npy (make_models.py's .ref folders).
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const a = { model: null, inputs: null, threads: 1 };
  for (let i = 2; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    if (!(k in a)) throw new Error(`unknown option ${argv[i]}`);
    a[k] = k === 'threads' ? parseInt(argv[i + 1], 10) : argv[i + 1];
  }
  if (!a.model || !a.inputs) throw new Error('--model and --inputs are required');
  return a;
}

// A little-endian .npy of float32, int64 or int32 as an ort.Tensor.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim())
    .filter((s) => s.length > 0).map(Number);
  const data = buf.subarray(10 + headerLen);
  const copy = Uint8Array.from(data);
  const types = { '<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array],
    '<i4': ['int32', Int32Array] };
  const [type, Array] = types[descr];
  return new ort.Tensor(type, new Array(copy.buffer), shape);
}

async function main() {
  const a = parseArgs(process.argv);
  const options = { graphOptimizationLevel: 'all', intraOpNumThreads: a.threads,
    interOpNumThreads: 1, executionProviders: ['cpu'] };
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, options);
  const t1 = process.hrtime.bigint();
  const feeds = {};
  for (const name of session.inputNames) feeds[name] = readNpy(path.join(a.inputs, `in.${name}.npy`));
  const t2 = process.hrtime.bigint();
  await session.run(feeds);
  const t3 = process.hrtime.bigint();
  const ms = (x, y) => Number(y - x) / 1e6;
  console.log(JSON.stringify({ model: path.basename(a.model), session_create_ms: ms(t0, t1),
    first_run_ms: ms(t2, t3) }));
}

main().catch((e) => { console.error(e); process.exit(1); });
