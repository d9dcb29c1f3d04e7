// Loads an original ONNX model and gopt's export of it with ONNX Runtime
// (onnxruntime-node), feeds both the same seeded inputs and checks that
// every output is identical. A model whose weights were stripped (the
// "light" models, ConstantOfShape stand-ins included) still runs; one that
// cannot be run at all must still load.
//
//   node compare_outputs.js ORIGINAL.onnx EXPORTED.onnx \
//       ['{"sr": 16000, "dims": {"sequence": 512}}']
//
// The optional JSON object fixes the value of scalar inputs a model needs
// in a range (a sample rate) and, under "dims", the symbolic dimensions
// (those it does not name take 1, as gopt's importer does). Without
// "dims", symbolic dimensions named "batch" take 1, other symbolic
// dimensions 512 (a sequence long enough for any window).
// Exit status 0 when the export loads and computes the same outputs, 1
// otherwise (the reason on stderr). NODE_PATH must reach onnxruntime-node
// (scripts/install-deps.sh installs it under build/npm/node_modules).
'use strict';

const ort = require('onnxruntime-node');

// xorshift32: the same inputs on every run.
function makeRandom(seed) {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 4294967296;
  };
}

const kArrays = {
  float32: Float32Array,
  float64: Float64Array,
  int32: Int32Array,
  int64: BigInt64Array,
  int8: Int8Array,
  uint8: Uint8Array,
  bool: Uint8Array,
};

function seededFeeds(session, random, fixed) {
  const feeds = {};
  for (const meta of session.inputMetadata) {
    if (!meta.isTensor || !(meta.type in kArrays)) {
      throw new Error(`input '${meta.name}' has type ${meta.type}, which ` +
                      'the check cannot make values for');
    }
    const dims = meta.shape.map((d) => {
      if (typeof d === 'number' && d > 0) return d;
      if (fixed.dims !== undefined) return fixed.dims[d] || 1;
      return d === 'batch' ? 1 : 512;
    });
    const size = dims.reduce((a, b) => a * b, 1);
    const data = new kArrays[meta.type](size);
    for (let i = 0; i < size; ++i) {
      const u = random();
      if (meta.name in fixed) {
        data[i] = meta.type === 'int64' ? BigInt(fixed[meta.name])
                                        : fixed[meta.name];
      } else if (meta.type === 'int64') data[i] = BigInt(Math.floor(u * 4));
      else if (meta.type === 'bool') data[i] = u < 0.5 ? 0 : 1;
      else if (meta.type.startsWith('float')) data[i] = u * 2 - 1;
      else data[i] = Math.floor(u * 4);
    }
    feeds[meta.name] = new ort.Tensor(meta.type, data, dims);
  }
  return feeds;
}

function sameTensor(a, b) {
  if (a.type !== b.type || a.dims.join(',') !== b.dims.join(',')) return false;
  for (let i = 0; i < a.data.length; ++i) {
    const x = a.data[i];
    const y = b.data[i];
    if (x !== y && !(Number.isNaN(x) && Number.isNaN(y))) return false;
  }
  return true;
}

async function main() {
  const [original, exported, fixedJson] = process.argv.slice(2);
  const fixed = fixedJson ? JSON.parse(fixedJson) : {};
  if (!original || !exported) {
    throw new Error('usage: compare_outputs.js ORIGINAL.onnx EXPORTED.onnx');
  }
  const options = {intraOpNumThreads: 1, interOpNumThreads: 1,
                   logSeverityLevel: 3};
  const before = await ort.InferenceSession.create(original, options);
  const after = await ort.InferenceSession.create(exported, options);
  let feeds;
  try {
    feeds = seededFeeds(before, makeRandom(40), fixed);
  } catch (error) {
    console.log(`${exported}: loads (not run: ${error.message})`);
    return;
  }
  const want = await before.run(feeds);
  const got = await after.run(feeds);
  for (const name of before.outputNames) {
    if (!(name in got) || !sameTensor(want[name], got[name])) {
      throw new Error(`output '${name}' differs from the original's`);
    }
  }
  console.log(`${exported}: same ${before.outputNames.length} output(s) ` +
              'as the original');
}

main().catch((error) => {
  console.error(`${process.argv[3]}: ${error.message}`);
  process.exit(1);
});
